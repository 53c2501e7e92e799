/* cli_market_fetch.c -- `proteusctl market fetch`: DescribeSpotPriceHistory from
 * EC2 into the store, the same rows `aws ec2 describe-spot-price-history`
 * returns, in one transaction (nothing is stored when any page fails).
 * Credentials come from the AWS chain (awscred.h), never the command line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloudapi/awscred.h"
#include "../../cloudapi/ec2_api.h"
#include "../../cloudapi/trace.h"
#include "../../common/log.h"
#include "../../db/store.h"
#include "cli.h"

#define FETCH_LIST_MAX 64   /* --types / --zones entries */
#define FETCH_DAYS_MAX 90   /* EC2 keeps 90 days of spot price history */
#define FETCH_DAYS_DEFAULT 7

static const char fetch_usage[] =
	"usage: proteusctl market fetch --types T1[,T2...] [--region R]\n"
	"                               [--zones Z1[,Z2...]] [--days N]\n"
	"                               [--product P] [--page-size N]\n"
	"                               [--db PATH] [--endpoint URL] [--json]\n"
	"\n"
	"Fetch spot price history from EC2 (DescribeSpotPriceHistory, every\n"
	"page) for the last N days (default 7, at most 90) and store it, in\n"
	"one transaction: when any request fails nothing is stored.  Records\n"
	"already stored are not stored twice.\n"
	"\n"
	"  --types LIST   instance types, comma-separated (required;\n"
	"                 --type is the same option)\n"
	"  --zones LIST   availability zones (default: every zone; --zone\n"
	"                 is the same option)\n"
	"  --region R     default $AWS_REGION, $AWS_DEFAULT_REGION, then the\n"
	"                 profile's region in ~/.aws/config\n"
	"  --product P    default Linux/UNIX\n"
	"  --page-size N  records per request, 1..1000 (default 1000)\n"
	"  --endpoint URL default $AWS_ENDPOINT_URL_EC2, $AWS_ENDPOINT_URL,\n"
	"                 then https://ec2.REGION.amazonaws.com/\n"
	"  --db PATH      database (default: see 'proteusctl --help')\n"
	"  --json         print the summary as one JSON object\n"
	"\n"
	"Credentials: the AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/\n"
	"AWS_SESSION_TOKEN, ~/.aws/credentials and ~/.aws/config with\n"
	"AWS_PROFILE, then the instance role); never on the command line.\n"
	"\n"
	"exit: 0 ok, 1 failure (AWS, network, database), 2 usage, 4 no record\n"
	"matched\n";

struct strv {
	char *v[FETCH_LIST_MAX];
	size_t n;
};

static void strv_release(struct strv *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

/* Split a comma-separated option value into l (appending). */
static int split_list(const char *opt, const char *s, struct strv *l)
{
	const char *p = s;

	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == 0 || len >= STORE_NAME_MAX) {
			log_err("--%s: item %zu of '%s' is empty or longer "
				"than %d bytes", opt, l->n + 1, s,
				STORE_NAME_MAX - 1);
			return -1;
		}
		for (size_t i = 0; i < len; i++) {
			if ((unsigned char)p[i] <= ' ' || p[i] == '&' ||
			    p[i] == '=') {
				log_err("--%s: item %zu of '%s' has a space "
					"or a bad character", opt, l->n + 1,
					s);
				return -1;
			}
		}
		if (l->n == FETCH_LIST_MAX) {
			log_err("--%s: over %d items", opt, FETCH_LIST_MAX);
			return -1;
		}
		l->v[l->n] = px_strndup(p, len);
		if (!l->v[l->n]) {
			log_err("out of memory");
			return -1;
		}
		l->n++;
		if (!end)
			return 0;
		p = end + 1;
	}
}

/* Parse a decimal integer in [lo, hi] (whole string). */
static int parse_int(const char *opt, const char *s, long lo, long hi,
		     long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		log_err("--%s: '%s' is not a whole number in %ld..%ld", opt,
			s, lo, hi);
		return -1;
	}
	*ret = v;
	return 0;
}

struct fetch_ctx {
	struct store *st;
	const char *region;
	EVP_MD_CTX *md;   /* digest of the records received */
	int64_t inserted;
};

static enum px_err fetch_record(const struct trace_record *r, void *arg,
				struct px_error *err)
{
	struct fetch_ctx *c = arg;
	char line[4 * STORE_NAME_MAX + 64];
	bool ins = false;
	int64_t mid;
	enum px_err e;
	int n;

	e = store_market_get_or_add(c->st, c->region, r->zone, r->type,
				    r->product, &mid, err);
	if (e == PX_OK)
		e = store_price_add(c->st, mid, r->t_s, r->price_uusd, &ins,
				    err);
	if (e != PX_OK) {
		px_error_prefix(err, "record %llu: ",
				(unsigned long long)r->index);
		return e;
	}
	c->inserted += ins;
	n = snprintf(line, sizeof(line), "%s\t%s\t%s\t%" PRId64 "\t%" PRId64
		     "\n", r->zone, r->type, r->product, r->t_s,
		     r->price_uusd);
	if (n > 0 && (size_t)n < sizeof(line))
		EVP_DigestUpdate(c->md, line, (size_t)n);
	return PX_OK;
}

/* "ec2:REGION:T1,T2:Z1,Z2|*:PRODUCT:START..END", the provenance path. */
static char *fetch_source(const char *region, const struct strv *types,
			  const struct strv *zones, const char *product,
			  int64_t start_s, int64_t end_s)
{
	size_t cap = 256 + strlen(region) + strlen(product);
	char a[32], b[32], *s;
	size_t len = 0;

	for (size_t i = 0; i < types->n; i++)
		cap += strlen(types->v[i]) + 1;
	for (size_t i = 0; i < zones->n; i++)
		cap += strlen(zones->v[i]) + 1;
	s = malloc(cap);
	if (!s)
		return NULL;
	len += (size_t)snprintf(s + len, cap - len, "ec2:%s:", region);
	for (size_t i = 0; i < types->n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%s",
					i ? "," : "", types->v[i]);
	len += (size_t)snprintf(s + len, cap - len, ":");
	for (size_t i = 0; i < zones->n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%s",
					i ? "," : "", zones->v[i]);
	snprintf(s + len, cap - len, "%s:%s:%s..%s", zones->n ? "" : "*",
		 product, px_format_time(start_s, a, sizeof(a)),
		 px_format_time(end_s, b, sizeof(b)));
	return s;
}

static void explain_aws(const struct ec2_aws_error *aws,
			enum awscred_source src)
{
	if (!strcmp(aws->code, "AuthFailure") ||
	    !strcmp(aws->code, "SignatureDoesNotMatch") ||
	    !strcmp(aws->code, "InvalidClientTokenId") ||
	    !strcmp(aws->code, "UnrecognizedClientException"))
		log_err("the credentials (from %s) were refused: check the "
			"key id and secret, and AWS_PROFILE",
			awscred_source_name(src));
	else if (!strcmp(aws->code, "UnauthorizedOperation"))
		log_err("the credentials (from %s) are not allowed "
			"ec2:DescribeSpotPriceHistory",
			awscred_source_name(src));
	else if (!strcmp(aws->code, "ExpiredToken"))
		log_err("the session token (from %s) has expired: get new "
			"credentials", awscred_source_name(src));
}

struct fetch_opts {
	const char *db, *endpoint, *product, *region;
	struct strv types, zones;
	long days, page_size;
	bool json;
};

static int fetch_parse(int argc, char **argv, struct fetch_opts *o)
{
	static const struct option opts[] = {
		{"days", required_argument, NULL, 'n'},
		{"db", required_argument, NULL, 'd'},
		{"endpoint", required_argument, NULL, 'e'},
		{"help", no_argument, NULL, 'h'},
		{"page-size", required_argument, NULL, 's'},
		{"product", required_argument, NULL, 'p'},
		{"region", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{"type", required_argument, NULL, 't'},
		{"types", required_argument, NULL, 't'},
		{"zone", required_argument, NULL, 'z'},
		{"zones", required_argument, NULL, 'z'},
		{0},
	};
	int c;

	o->days = FETCH_DAYS_DEFAULT;
	o->page_size = 1000;
	o->product = "Linux/UNIX";
	o->json = cli_g.json;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":d:e:hn:p:r:s:t:z:", opts,
				NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'e': o->endpoint = optarg; break;
		case 'h': fputs(fetch_usage, stdout); return -1;
		case 'j': o->json = true; break;
		case 'n':
			if (parse_int("days", optarg, 1, FETCH_DAYS_MAX,
				      &o->days))
				return CLI_EXIT_USAGE;
			break;
		case 'p': o->product = optarg; break;
		case 'r': o->region = optarg; break;
		case 's':
			if (parse_int("page-size", optarg, 1, 1000,
				      &o->page_size))
				return CLI_EXIT_USAGE;
			break;
		case 't':
			if (split_list("types", optarg, &o->types))
				return CLI_EXIT_USAGE;
			break;
		case 'z':
			if (split_list("zones", optarg, &o->zones))
				return CLI_EXIT_USAGE;
			break;
		default: return cli_bad_option("market fetch", argv, c);
		}
	}
	if (optind < argc)
		/* not echoed: it may be a secret pasted by mistake */
		return cli_usage("market fetch", "unexpected argument %d "
				 "(credentials are never taken from the "
				 "command line)", optind);
	if (!o->types.n)
		return cli_usage("market fetch", "--types is required (e.g. "
				 "--types c4.large,c4.xlarge)");
	if (!*o->product || strlen(o->product) >= STORE_NAME_MAX) {
		log_err("--product: '%s' is empty or longer than %d bytes",
			o->product, STORE_NAME_MAX - 1);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* The region: --region, else the AWS chain's.  Zones must be in it. */
static int fetch_region(struct fetch_opts *o, char *buf, size_t len)
{
	struct px_error err = {0};
	char zr[STORE_NAME_MAX];

	if (o->region) {
		if (!*o->region || strlen(o->region) >= STORE_NAME_MAX) {
			log_err("--region: '%s' is empty or too long",
				o->region);
			return CLI_EXIT_USAGE;
		}
		snprintf(buf, len, "%s", o->region);
	} else if (awscred_region(buf, len, &err) != PX_OK) {
		log_err("no region: pass --region or set AWS_REGION");
		return CLI_EXIT_USAGE;
	}
	o->region = buf;
	for (size_t i = 0; i < o->zones.n; i++) {
		if (trace_zone_region(o->zones.v[i], zr, sizeof(zr)) !=
		    PX_OK || strcmp(zr, buf)) {
			log_err("--zones: '%s' is not a zone of region '%s'",
				o->zones.v[i], buf);
			return CLI_EXIT_USAGE;
		}
	}
	return CLI_EXIT_OK;
}

static int fetch_exit(enum px_err e)
{
	switch (e) {
	case PX_OK:
		return CLI_EXIT_OK;
	case PX_EAWS:
	case PX_EHTTP:
	case PX_EPROTO:
	case PX_ETOOBIG:
	case PX_ENOENT:
		return CLI_EXIT_FAIL;
	default:
		return cli_exit_for(e);
	}
}

int cli_market_fetch(int argc, char **argv)
{
	struct fetch_opts o = {0};
	struct px_error err = {0};
	struct ec2_aws_error aws = {0};
	struct awscred_provider *prov = NULL;
	struct awscred_opts copts = {0};
	struct awscred cr;
	struct ec2_client *ec2 = NULL;
	struct ec2_config cfg = {0};
	struct ec2_sph_query q = {0};
	struct ec2_sph_stats ss = {0};
	struct fetch_ctx fc = {0};
	struct store_import imp;
	struct store *st = NULL;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char region[STORE_NAME_MAX], sha[2 * EVP_MAX_MD_SIZE + 1] = "";
	char a[32], b[32], *path = NULL, *source = NULL;
	enum awscred_source src = AWSCRED_NONE;
	const char *warn;
	int64_t end_s, start_s;
	uint64_t t0;
	enum px_err e;
	int rc;

	rc = fetch_parse(argc, argv, &o);
	if (rc) {
		rc = rc < 0 ? CLI_EXIT_OK : rc;
		goto out;
	}
	rc = fetch_region(&o, region, sizeof(region));
	if (rc)
		goto out;
	end_s = px_now_wall_us() / PX_USEC_PER_SEC;
	start_s = end_s - (int64_t)o.days * 86400;

	rc = CLI_EXIT_FAIL;
	e = awscred_provider_new(&copts, &prov, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		goto out;
	}
	warn = awscred_provider_warning(prov);
	if (warn)
		log_warn("%s", warn);
	if (awscred_provider_get(prov, end_s, &cr, &err) == PX_OK)
		src = cr.source;
	awscred_clear(&cr);
	cfg.region = region;
	cfg.endpoint = o.endpoint;
	cfg.creds = prov;
	e = ec2_client_new(&cfg, &ec2, &err);
	if (e != PX_OK) {
		log_err("ec2 client: %s", err.msg);
		goto out;
	}
	log_info("fetching from %s with credentials from %s",
		 ec2_client_endpoint(ec2), awscred_source_name(src));

	path = o.db ? strdup(o.db) : cli_default_db();
	if (!path)
		goto out;
	e = store_open(path, &st, &err);
	if (e != PX_OK) {
		log_err("database '%s': %s", path, err.msg);
		goto out;
	}
	fc.st = st;
	fc.region = region;
	fc.md = EVP_MD_CTX_new();
	if (!fc.md || !EVP_DigestInit_ex(fc.md, EVP_sha256(), NULL)) {
		log_err("cannot start sha256");
		goto out;
	}
	source = fetch_source(region, &o.types, &o.zones, o.product, start_s,
			      end_s);
	if (!source) {
		log_err("out of memory");
		goto out;
	}
	q = (struct ec2_sph_query){
		.types = (const char *const *)o.types.v, .n_types = o.types.n,
		.zones = (const char *const *)o.zones.v, .n_zones = o.zones.n,
		.product = o.product, .start_s = start_s, .end_s = end_s,
		.max_results = (int)o.page_size,
	};
	t0 = px_now_mono_us();
	e = store_begin(st, &err);
	if (e == PX_OK)
		e = ec2_describe_spot_price_history(ec2, &q, fetch_record, &fc,
						    &ss, &err, &aws);
	if (e == PX_OK && ss.records == 0) {
		store_rollback(st);
		log_err("%s: no records (check the instance types, zones and "
			"product; nothing was stored)", source);
		rc = CLI_EXIT_NOTFOUND;
		goto out;
	}
	if (e == PX_OK) {
		EVP_DigestFinal_ex(fc.md, md, &mdlen);
		for (unsigned int i = 0; i < mdlen; i++)
			snprintf(sha + 2 * i, 3, "%02x", md[i]);
		imp = (struct store_import){
			.path = source, .sha256 = sha,
			.records = (int64_t)ss.records,
			.inserted = fc.inserted, .first_s = ss.first_s,
			.last_s = ss.last_s, .at_us = px_now_wall_us(),
		};
		e = store_import_add(st, &imp, &err);
	}
	if (e == PX_OK)
		e = store_commit(st, &err);
	if (e != PX_OK) {
		store_rollback(st);
		log_err("%s", err.msg[0] ? err.msg : px_strerror(e));
		if (e == PX_EAWS)
			explain_aws(&aws, src);
		log_err("nothing was stored");
		rc = fetch_exit(e);
		goto out;
	}
	rc = CLI_EXIT_OK;
	if (o.json) {
		json_t *j = json_pack(
			"{s:s, s:s, s:I, s:I, s:s, s:s, s:I, s:s, s:f}",
			"source", source, "region", region, "records",
			(json_int_t)ss.records, "new", (json_int_t)fc.inserted,
			"first", px_format_time(ss.first_s, a, sizeof(a)),
			"last", px_format_time(ss.last_s, b, sizeof(b)),
			"pages", (json_int_t)ss.pages, "sha256", sha,
			"seconds", (double)(px_now_mono_us() - t0) / 1e6);

		if (!j || json_dumpf(j, stdout, JSON_INDENT(2)))
			rc = CLI_EXIT_FAIL;
		else
			putchar('\n');
		json_decref(j);
	} else {
		printf("%s: %" PRIu64 " records, %" PRId64 " new, %s .. %s "
		       "(%" PRIu64 " pages, %.2f s)\n", source, ss.records,
		       fc.inserted, px_format_time(ss.first_s, a, sizeof(a)),
		       px_format_time(ss.last_s, b, sizeof(b)), ss.pages,
		       (double)(px_now_mono_us() - t0) / 1e6);
	}
out:
	store_close(st);
	ec2_client_free(ec2);
	awscred_provider_free(prov);
	EVP_MD_CTX_free(fc.md);
	free(source);
	free(path);
	strv_release(&o.types);
	strv_release(&o.zones);
	return rc;
}
