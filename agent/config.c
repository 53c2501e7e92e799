/* config.c -- the config table and what walks it: defaults, the file
 * parser, reload, formatting and JSON (see config.h, docs/proteusd.md).
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../bidbrain/arbiter.h"
#include "../bidbrain/pool.h"
#include "../common/enroll.h"
#include "../common/log.h"
#include "outbound.h"
#include "proto.h"
#include "world.h"

#define CFG(f) offsetof(struct proteusd_config, f)

static const struct config_choice level_choices[] = {
	{"err", LOG_LVL_ERR, NULL},       {"warning", LOG_LVL_WARN, NULL},
	{"notice", LOG_LVL_NOTICE, NULL}, {"info", LOG_LVL_INFO, NULL},
	{"debug", LOG_LVL_DEBUG, NULL},   {NULL, 0, NULL},
};

static const struct config_choice yes_no_choices[] = {
	{"no", 0, NULL}, {"yes", 1, NULL}, {NULL, 0, NULL},
};

/* arb_name()'s names (test_config.c holds them to it) */
static const struct config_choice arbiter_choices[] = {
	{"fifo", ARB_FIFO, NULL},
	{"max-min", ARB_MAX_MIN, NULL},
	{"finish-time", ARB_FINISH_TIME, NULL},
	{"goodput", ARB_GOODPUT, NULL},
	{NULL, 0, NULL},
};

/* ---- what a string key's value must look like ---- */

/* The length of the region name s starts with ([a-z]+(-[a-z]+)*-[0-9]+,
 * as trace_zone_region reads it), 0 when none; a region is followed by
 * the end, a letter or '-'. */
static size_t region_prefix(const char *s)
{
	size_t i = 0;

	for (;;) {
		size_t start = i;

		while (s[i] >= 'a' && s[i] <= 'z')
			i++;
		if (i == start || s[i] != '-')
			return 0;
		i++;
		if (s[i] >= '0' && s[i] <= '9')
			break;
	}
	while (s[i] >= '0' && s[i] <= '9')
		i++;
	if (s[i] != '\0' && s[i] != '-' && !(s[i] >= 'a' && s[i] <= 'z'))
		return 0;
	return i;
}

bool config_zone_in_region(const char *zone, const char *region)
{
	size_t r = region_prefix(zone);

	return r == strlen(region) && !strncmp(zone, region, r);
}

/* The world of jobs whose spec names none: one the registry has that
 * runs the daemon's jobs (world.h; the world's own keys its check hook
 * checks at start).  sim is refused at load and reload rather than
 * accepted and ignored. */
static bool check_world(const char *val, struct proteusd_config *cfg,
			char *why, size_t wlen)
{
	const struct world_ops *o = world_ops_by_name(val);
	char names[128];

	(void)cfg;
	if (o && o->create)
		return true;
	if (o && o->no_jobs) {
		snprintf(why, wlen, "'%s' %s", o->name, o->no_jobs);
		return false;
	}
	world_daemon_names(names, sizeof names, "", ", ");
	snprintf(why, wlen, "'%.64s' is not one of %s", val, names);
	return false;
}

/* The default world: the registry's first that runs the daemon's jobs
 * (local). */
static enum px_err default_world(char *buf, size_t len)
{
	const struct world_ops *o;

	for (size_t i = 0; (o = world_ops_at(i)) != NULL; i++)
		if (o->create) {
			snprintf(buf, len, "%s", o->name);
			return PX_OK;
		}
	return PX_ENOENT;
}

static bool check_region(const char *val, struct proteusd_config *cfg,
			 char *why, size_t wlen)
{
	if (region_prefix(val) != strlen(val)) {
		snprintf(why, wlen, "'%.64s' is not a region name such as "
			 "us-east-1", val);
		return false;
	}
	return true;
}

/* A zone: a region, then letters, digits and '-' (us-east-1a,
 * us-west-2-lax-1a). */
static bool is_zone(const char *s)
{
	size_t r = region_prefix(s), n = strlen(s);

	if (!r || r == n || n >= CONFIG_NAME_MAX)
		return false;
	for (size_t i = r; i < n; i++)
		if (!islower((unsigned char)s[i]) &&
		    !isdigit((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

/* PREFIX-, then 8 or 17 lower-case hex digits: an EC2 resource id. */
static bool is_ec2_id(const char *s, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);

	if (n <= p || strncmp(s, prefix, p))
		return false;
	if (n - p != 8 && n - p != 17)
		return false;
	for (size_t i = p; i < n; i++)
		if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' &&
						       s[i] <= 'f'))
			return false;
	return true;
}

static bool check_ami(const char *val, struct proteusd_config *cfg,
		      char *why, size_t wlen)
{
	if (*val && !is_ec2_id(val, strlen(val), "ami-")) {
		snprintf(why, wlen, "'%.64s' is not an image id (ami- and 8 "
			 "or 17 hex digits)", val);
		return false;
	}
	return true;
}

/* The next item of a comma-separated list at *pos, blanks trimmed, into
 * buf (len bytes); false at the end.  *too_long: it did not fit. */
static bool next_item(const char *list, size_t *pos, char *buf, size_t len,
		      bool *too_long)
{
	const char *p = list + *pos, *e;
	size_t n;

	if (!*p && (*pos == 0 || p[-1] != ','))
		return false;
	e = p + strcspn(p, ",");
	*pos = (size_t)(e - list) + (*e == ',');
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	n = (size_t)(e - p);
	*too_long = n >= len;
	if (*too_long)
		n = len - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return true;
}

static bool check_subnets(const char *val, struct proteusd_config *cfg,
			  char *why, size_t wlen)
{
	char item[2 * CONFIG_NAME_MAX], *eq;
	struct config_subnet *sn;
	size_t pos = 0;
	bool long_item;
	int n = 0;

	memset(cfg->ec2_subnet, 0, sizeof cfg->ec2_subnet);
	cfg->ec2_subnet_count = 0;
	if (!*val)
		return true;
	while (next_item(val, &pos, item, sizeof item, &long_item)) {
		eq = strchr(item, '=');
		if (long_item || !*item || !eq) {
			snprintf(why, wlen, "item %d '%.64s' is not "
				 "ZONE=subnet-ID", n + 1, item);
			return false;
		}
		*eq = '\0';
		if (!is_zone(item)) {
			snprintf(why, wlen, "'%.64s' is not a zone name such "
				 "as us-east-1a", item);
			return false;
		}
		if (!is_ec2_id(eq + 1, strlen(eq + 1), "subnet-")) {
			snprintf(why, wlen, "'%.64s' is not a subnet id "
				 "(subnet- and 8 or 17 hex digits)", eq + 1);
			return false;
		}
		for (int i = 0; i < n; i++)
			if (!strcmp(cfg->ec2_subnet[i].zone, item)) {
				snprintf(why, wlen, "zone '%s' is given twice: "
					 "one subnet per zone", item);
				return false;
			}
		if (n == CONFIG_EC2_SUBNETS_MAX) {
			snprintf(why, wlen, "more than %d zones",
				 CONFIG_EC2_SUBNETS_MAX);
			return false;
		}
		/* both fit: is_zone and is_ec2_id bound their lengths */
		sn = &cfg->ec2_subnet[n++];
		memcpy(sn->zone, item, strlen(item) + 1);
		memcpy(sn->subnet, eq + 1, strlen(eq + 1) + 1);
	}
	cfg->ec2_subnet_count = n;
	return true;
}

static bool check_sgs(const char *val, struct proteusd_config *cfg,
		      char *why, size_t wlen)
{
	char item[CONFIG_NAME_MAX];
	size_t pos = 0;
	bool long_item;
	int n = 0;

	memset(cfg->ec2_sg, 0, sizeof cfg->ec2_sg);
	cfg->ec2_sg_count = 0;
	if (!*val)
		return true;
	while (next_item(val, &pos, item, sizeof item, &long_item)) {
		if (long_item || !is_ec2_id(item, strlen(item), "sg-")) {
			snprintf(why, wlen, "'%.64s%s' is not a security group "
				 "id (sg- and 8 or 17 hex digits)", item,
				 long_item ? "..." : "");
			return false;
		}
		for (int i = 0; i < n; i++)
			if (!strcmp(cfg->ec2_sg[i], item)) {
				snprintf(why, wlen, "'%s' is given twice",
					 item);
				return false;
			}
		if (n == CONFIG_EC2_SGS_MAX) {
			snprintf(why, wlen, "more than %d security groups",
				 CONFIG_EC2_SGS_MAX);
			return false;
		}
		snprintf(cfg->ec2_sg[n++], sizeof cfg->ec2_sg[0], "%s", item);
	}
	cfg->ec2_sg_count = n;
	return true;
}

/* IAM's name characters: letters, digits and +=,.@_- */
static bool iam_name_chars(const char *s, size_t n, bool slash)
{
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("+=,.@_-", s[i])
		    && !(slash && s[i] == '/'))
			return false;
	return true;
}

/* A name (1..128 of IAM's characters) or an ARN:
 * arn:PARTITION:iam::ACCOUNT:instance-profile/[PATH/]NAME. */
static bool check_profile(const char *val, struct proteusd_config *cfg,
			  char *why, size_t wlen)
{
	static const char kind[] = ":instance-profile/";
	const char *p = val + 4, *name;
	size_t n = strlen(val);

	cfg->ec2_instance_profile_is_arn = !strncmp(val, "arn:", 4);
	if (!*val)
		return true;
	if (!cfg->ec2_instance_profile_is_arn) {
		if (n <= 128 && iam_name_chars(val, n, false))
			return true;
		snprintf(why, wlen, "'%.64s' is not an instance profile name "
			 "(1 to 128 letters, digits and +=,.@_-) or ARN", val);
		return false;
	}
	/* partition: aws, aws-cn, aws-us-gov, ... */
	while (islower((unsigned char)*p) || *p == '-')
		p++;
	if (p == val + 4 || strncmp(p, ":iam::", 6))
		goto bad_arn;
	p += 6;
	for (int i = 0; i < 12; i++, p++)
		if (!isdigit((unsigned char)*p))
			goto bad_arn;
	if (strncmp(p, kind, sizeof kind - 1))
		goto bad_arn;
	p += sizeof kind - 1;
	name = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
	if (*name && strlen(name) <= 128 && iam_name_chars(p, strlen(p), true))
		return true;
bad_arn:
	snprintf(why, wlen, "'%.64s' is not an instance profile ARN "
		 "(arn:aws:iam::ACCOUNT:instance-profile/NAME)", val);
	return false;
}

static bool check_key_name(const char *val, struct proteusd_config *cfg,
			   char *why, size_t wlen)
{
	for (const char *p = val; *p; p++)
		if (*p < ' ' || *p > '~') {
			snprintf(why, wlen, "a key pair name is printable "
				 "ASCII; byte %zu is not", (size_t)(p - val));
			return false;
		}
	return true;
}

/* A DNS host name (RFC 1123): labels of letters, digits and '-', not at
 * either end, 1..63 bytes each, 253 in all. */
static bool is_host_name(const char *s, size_t n)
{
	size_t label = 0;

	if (!n || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (!label || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return false;
		if (s[i] == '-' && !label)
			return false;
		if (++label > 63)
			return false;
	}
	return label && s[n - 1] != '-';
}

/* A host as nodes dial it: a name, an IPv4 address or an IPv6 one
 * (bracketed in a URL: brackets says whether it is). */
static bool check_host(const char *s, size_t n, bool brackets,
		       const char **ret_what)
{
	char buf[CONFIG_HOST_MAX];
	unsigned char a[16];

	*ret_what = NULL;
	if (n >= sizeof buf)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (brackets) {
		if (n < 3 || buf[0] != '[' || buf[n - 1] != ']')
			return false;
		buf[n - 1] = '\0';
		if (inet_pton(AF_INET6, buf + 1, a) != 1)
			return false;
		return true;
	}
	if (inet_pton(AF_INET, buf, a) == 1) {
		if (!memcmp(a, "\0\0\0\0", 4))
			*ret_what = "the unspecified address";
		return true;
	}
	if (inet_pton(AF_INET6, buf, a) == 1) {
		if (!memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16))
			*ret_what = "the unspecified address";
		return true;
	}
	/* all digits and dots is a bad IPv4 address, not a name */
	if (strspn(buf, "0123456789.") == n)
		return false;
	return is_host_name(buf, n);
}

static bool check_head_address(const char *val, struct proteusd_config *cfg,
			       char *why, size_t wlen)
{
	const char *what;

	if (!*val)
		return true;
	if (!check_host(val, strlen(val), false, &what)) {
		snprintf(why, wlen, "'%.64s' is not a host name or an IP "
			 "address%s", val, val[0] == '[' ? " (an IPv6 address "
			 "goes without brackets)" : "");
		return false;
	}
	if (what) {
		snprintf(why, wlen, "'%.64s' is %s: give one the nodes can "
			 "reach", val, what);
		return false;
	}
	return true;
}

/* metrics_listen: HOST:PORT with a numeric address (an IPv6 one in
 * brackets), so that starting needs no name service; parsed into
 * metrics_host (no brackets) and metrics_port.  Empty: off. */
static bool check_metrics_listen(const char *val, struct proteusd_config *cfg,
				 char *why, size_t wlen)
{
	const char *colon = strrchr(val, ':'), *what;
	char host[CONFIG_NAME_MAX];
	unsigned char a[16];
	unsigned long port;
	size_t hn, pn;

	cfg->metrics_host[0] = '\0';
	cfg->metrics_port = 0;
	if (!*val)
		return true;
	hn = colon ? (size_t)(colon - val) : 0;
	pn = colon ? strspn(colon + 1, "0123456789") : 0;
	snprintf(host, sizeof host, "%.*s", (int)hn, val);
	if (!colon || !pn || colon[1 + pn] || pn > 5 ||
	    !(val[0] == '[' ? check_host(val, hn, true, &what) :
	      inet_pton(AF_INET, host, a) == 1)) {
		snprintf(why, wlen, "'%.64s' is not ADDRESS:PORT with a "
			 "numeric address, such as 127.0.0.1:9464 or "
			 "[::1]:9464", val);
		return false;
	}
	port = strtoul(colon + 1, NULL, 10);
	if (port < 1 || port > 65535) {
		snprintf(why, wlen, "'%.64s': the port must be in 1..65535",
			 val);
		return false;
	}
	if (val[0] == '[')
		snprintf(cfg->metrics_host, sizeof cfg->metrics_host, "%.*s",
			 (int)hn - 2, val + 1);
	else
		snprintf(cfg->metrics_host, sizeof cfg->metrics_host, "%.*s",
			 (int)hn, val);
	cfg->metrics_port = (int)port;
	return true;
}

/* LO-HI: ports from 1024 to 65535, at least 64 of them. */
static bool check_ports(const char *val, struct proteusd_config *cfg,
			char *why, size_t wlen)
{
	unsigned long lo, hi;
	size_t a = strspn(val, "0123456789"), b;

	b = val[a] == '-' ? strspn(val + a + 1, "0123456789") : 0;
	if (!a || !b || val[a + 1 + b] || a > 5 || b > 5) {
		snprintf(why, wlen, "'%.64s' is not a port range LO-HI such "
			 "as 28000-28999", val);
		return false;
	}
	lo = strtoul(val, NULL, 10);
	hi = strtoul(val + a + 1, NULL, 10);
	if (lo < 1024 || hi > 65535 || lo > hi) {
		snprintf(why, wlen, "'%.64s': ports must be in 1024..65535, "
			 "LO <= HI", val);
		return false;
	}
	if (hi - lo + 1 < 64) {
		snprintf(why, wlen, "'%.64s' is %lu ports; it takes at least "
			 "64", val, hi - lo + 1);
		return false;
	}
	cfg->trainer_port_lo = (int64_t)lo;
	cfg->trainer_port_hi = (int64_t)hi;
	return true;
}

/* http(s)://HOST[:PORT][/PATH]: no user or password (nothing secret
 * goes in this file), no blanks or control bytes. */
static bool check_endpoint(const char *val, struct proteusd_config *cfg,
			   char *why, size_t wlen)
{
	const char *h, *e, *hend, *port, *what;

	if (!*val)
		return true;
	if (!strncmp(val, "https://", 8))
		h = val + 8;
	else if (!strncmp(val, "http://", 7))
		h = val + 7;
	else {
		snprintf(why, wlen, "'%.64s' is not an http:// or https:// "
			 "URL", val);
		return false;
	}
	for (const char *p = val; *p; p++)
		if (*p <= ' ' || *p > '~') {
			snprintf(why, wlen, "'%.64s': byte %zu is a blank, a "
				 "control or not ASCII", val,
				 (size_t)(p - val));
			return false;
		}
	e = h + strcspn(h, "/?#");
	if (memchr(h, '@', (size_t)(e - h))) {
		snprintf(why, wlen, "the URL holds a user or password: "
			 "credentials never go in this file");
		return false;
	}
	/* HOST[:PORT], HOST an IPv6 address in brackets or a name/IPv4 */
	if (*h == '[') {
		hend = memchr(h, ']', (size_t)(e - h));
		if (!hend)
			goto bad_host;
		hend++;
		port = hend < e ? hend : NULL;
		if (port && *port != ':')
			goto bad_host;
	} else {
		port = memchr(h, ':', (size_t)(e - h));
		hend = port ? port : e;
	}
	if (!check_host(h, (size_t)(hend - h), *h == '[', &what))
		goto bad_host;
	if (port) {
		size_t pn = (size_t)(e - port - 1);
		unsigned long p = strtoul(port + 1, NULL, 10);

		if (!pn || pn > 5 || strspn(port + 1, "0123456789") < pn ||
		    !p || p > 65535) {
			snprintf(why, wlen, "'%.64s': the port is not in "
				 "1..65535", val);
			return false;
		}
	}
	return true;
bad_host:
	snprintf(why, wlen, "'%.64s': no host name or IP address after the "
		 "scheme", val);
	return false;
}

bool config_url_check(const char *url, char *why, size_t wlen)
{
	if (!*url) {
		snprintf(why, wlen, "an empty URL");
		return false;
	}
	return check_endpoint(url, NULL, why, wlen);
}

/* notify_url_allow, data_url_allow: origins (agent/outbound.h). */
static bool check_allow(const char *val, struct proteusd_config *cfg,
			char *why, size_t wlen)
{
	(void)cfg;
	return outbound_allow_valid(val, why, wlen);
}

#define S3_PREFIX_MAX 512       /* an S3 prefix's bytes, s3:// and all */

bool config_s3_prefix_valid(const char *p, char *why, size_t wlen)
{
	const char *b = p + 5, *k;
	size_t bl, n = strlen(p);

	if (strncmp(p, "s3://", 5) || n > S3_PREFIX_MAX) {
		snprintf(why, wlen, "'%.64s': not s3://BUCKET[/PREFIX] of at "
			 "most %d bytes", p, S3_PREFIX_MAX);
		return false;
	}
	bl = strcspn(b, "/");
	if (bl < 3 || bl > 63 || strspn(b, "abcdefghijklmnopqrstuvwxyz"
					"0123456789.-") < bl ||
	    !isalnum((unsigned char)b[0]) ||
	    !isalnum((unsigned char)b[bl - 1])) {
		snprintf(why, wlen, "'%.64s': the bucket is not 3..63 of a-z "
			 "0-9 . - (a letter or digit first and last)", p);
		return false;
	}
	for (k = b + bl; *k == '/' && k[1]; ) {
		size_t sl = strcspn(k + 1, "/");

		if (!sl || (sl == 1 && k[1] == '.') ||
		    (sl == 2 && k[1] == '.' && k[2] == '.')) {
			snprintf(why, wlen, "'%.64s': an empty, '.' or '..' "
				 "segment in the prefix", p);
			return false;
		}
		k += 1 + sl;
	}
	for (k = b; *k; k++)
		if (*k <= ' ' || *k > '~' || *k == '\\' || *k == ',') {
			snprintf(why, wlen, "'%.64s': a blank, control, "
				 "non-ASCII, ',' or '\\' byte", p);
			return false;
		}
	return true;
}

/* p's length without its trailing '/'s (s3://B stays). */
static size_t s3_trim(const char *p, size_t n)
{
	while (n > 5 && p[n - 1] == '/')
		n--;
	return n;
}

bool config_s3_prefix_allows(const char *list, const char *store)
{
	size_t sn = s3_trim(store, strlen(store));

	for (const char *e = list; *e; ) {
		size_t el = strcspn(e, ","), t;

		while (el && *e == ' ') {
			e++;
			el--;
		}
		t = el;
		while (t && e[t - 1] == ' ')
			t--;
		t = t > 5 ? s3_trim(e, t) : t;
		if (t > 5 && sn >= t && !strncmp(store, e, t) &&
		    (sn == t || store[t] == '/'))
			return true;
		e += el;
		if (*e == ',')
			e++;
	}
	return false;
}

/* checkpoint_s3_prefixes: s3://BUCKET[/PREFIX],... */
static bool check_s3_prefixes(const char *val, struct proteusd_config *cfg,
			      char *why, size_t wlen)
{
	char one[S3_PREFIX_MAX + 2];

	(void)cfg;
	for (const char *e = val; *e; ) {
		size_t el = strcspn(e, ",");
		size_t a = strspn(e, " "), t = el;

		while (t > a && e[t - 1] == ' ')
			t--;
		if (t - a >= sizeof one || t == a) {
			snprintf(why, wlen, "an empty or over-long entry (s3://"
				 "BUCKET[/PREFIX],...)");
			return false;
		}
		memcpy(one, e + a, t - a);
		one[t - a] = '\0';
		if (!config_s3_prefix_valid(one, why, wlen))
			return false;
		e += el;
		if (*e == ',')
			e++;
	}
	return true;
}

/* notify_command: an absolute path, run without a shell. */
static bool check_command(const char *val, struct proteusd_config *cfg,
			  char *why, size_t wlen)
{
	if (*val && val[0] != '/') {
		snprintf(why, wlen, "'%.64s' is not an absolute path (it is "
			 "run without a shell, with no arguments of yours)",
			 val);
		return false;
	}
	return true;
}

/* An absolute path in the instance's boot script: only letters, digits
 * and ._+-/ (nothing a shell would read otherwise). */
static bool check_node_trainer(const char *val, struct proteusd_config *cfg,
			       char *why, size_t wlen)
{
	if (val[0] != '/') {
		snprintf(why, wlen, "'%.64s' is not an absolute path", val);
		return false;
	}
	for (const char *p = val; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._+-/", *p)) {
			snprintf(why, wlen, "'%.64s': only letters, digits and "
				 "._+-/ (it goes into the instance's boot "
				 "script)", val);
			return false;
		}
	return true;
}

/* ---- the pool all jobs share (bidbrain/pool.h, docs/pool.md) ---- */

/* A vCPU limit in pool.h's syntax, into *ret; why quotes the value, then
 * pool_limit_parse's reason. */
static bool check_limit(const char *val, struct pool_limit *ret, char *why,
			size_t wlen)
{
	struct px_error err = {0};
	char field[72];

	snprintf(field, sizeof field, "'%.64s'", val);
	if (pool_limit_parse(field, val, ret, &err) == PX_OK)
		return true;
	snprintf(why, wlen, "%s", err.msg);
	return false;
}

static bool check_pool_spot(const char *val, struct proteusd_config *cfg,
			    char *why, size_t wlen)
{
	return check_limit(val, &cfg->pool_limits.spot, why, wlen);
}

static bool check_pool_ondemand(const char *val, struct proteusd_config *cfg,
				char *why, size_t wlen)
{
	return check_limit(val, &cfg->pool_limits.ondemand, why, wlen);
}

#define POOL_USD_MAX 1000000    /* the workload file's bound too */

/* US dollars an hour, exactly, into micro-USD: DIGITS[.DIGITS], at most
 * six decimals (a micro-dollar is the unit: nothing is rounded away, and
 * no strtod to take "1e3", "inf" or a locale's comma); "none" or "": -1.
 */
static bool check_pool_usd(const char *val, struct proteusd_config *cfg,
			   char *why, size_t wlen)
{
	size_t d = strspn(val, "0123456789"), f = 0;
	int64_t v = 0;

	if (!*val || !strcmp(val, "none")) {
		cfg->pool_limits.uusd_per_hour = -1;
		return true;
	}
	if (val[d] == '.')
		f = strspn(val + d + 1, "0123456789");
	if (!d || d > 7 || (val[d] == '.' && (!f || f > 6)) ||
	    val[d + (val[d] == '.' ? 1 + f : 0)])
		goto bad;
	for (size_t i = 0; i < d; i++)
		v = v * 10 + (val[i] - '0');
	for (size_t i = 0; i < 6; i++)
		v = v * 10 + (i < f ? val[d + 1 + i] - '0' : 0);
	if (v > POOL_USD_MAX * PX_UUSD_PER_USD)
		goto bad;
	cfg->pool_limits.uusd_per_hour = v;
	return true;
bad:
	snprintf(why, wlen, "'%.64s' is not US dollars an hour, 0 to %d with "
		 "at most 6 decimals (such as 12.5), nor none", val,
		 POOL_USD_MAX);
	return false;
}

/* Themis's f: DIGITS[.DIGITS] (or .DIGITS) above 0, at most 1. */
static bool check_pool_fairness(const char *val, struct proteusd_config *cfg,
				char *why, size_t wlen)
{
	size_t d = strspn(val, "0123456789"), f = 0;
	double x;

	if (val[d] == '.')
		f = strspn(val + d + 1, "0123456789");
	if ((!d && !f) || d + f > 16 || (val[d] == '.' && !f) ||
	    val[d + (val[d] == '.' ? 1 + f : 0)])
		goto bad;
	x = strtod(val, NULL);
	if (!(x > 0 && x <= 1))
		goto bad;
	cfg->pool_fairness_f = x;
	return true;
bad:
	snprintf(why, wlen, "'%.64s' is not a share of the jobs above 0 and "
		 "at most 1 (a decimal such as 0.8)", val);
	return false;
}

/* The one table.  Keep docs/proteusd.md, proteusd(8) and
 * etc/proteusd.conf in step with it. */
static const struct config_key config_table[] = {
	{"db", CONFIG_STR, CFG(db), 1, CONFIG_PATH_MAX - 1, NULL,
	 CONFIG_IMMUTABLE,
	 "SQLite database: markets, prices, jobs, instances, events, costs "
	 "(default $PROTEUS_DB, $STATE_DIRECTORY/proteus.db, "
	 "/var/lib/proteus/proteus.db for root, else "
	 "$XDG_DATA_HOME/proteus/proteus.db or "
	 "~/.local/share/proteus/proteus.db)",
	 NULL, proto_default_db, NULL},
	{"world", CONFIG_STR, CFG(world), 1, CONFIG_NAME_MAX - 1, NULL,
	 CONFIG_IMMUTABLE,
	 "the world of jobs whose spec names none: local (processes here, "
	 "the market replayed from a trace) or ec2 (instances rented "
	 "through the EC2 API; the ec2_* keys)",
	 NULL, default_world, check_world},
	{"region", CONFIG_STR, CFG(region), 1, CONFIG_NAME_MAX - 1,
	 "us-east-1", CONFIG_IMMUTABLE,
	 "AWS region (a region name) for markets, on-demand prices and the "
	 "ec2 world's instances", NULL, NULL, check_region},
	{"log_level", CONFIG_ENUM, CFG(log_level), 0, 0, "notice",
	 CONFIG_RELOADABLE,
	 "most verbose level logged: err, warning, notice, info, debug",
	 level_choices, NULL, NULL},
	{"control_socket", CONFIG_STR, CFG(control_socket), 1,
	 CONFIG_SOCKET_MAX - 1, NULL, CONFIG_IMMUTABLE,
	 "control socket path (default $PROTEUS_SOCKET, "
	 "$RUNTIME_DIRECTORY/proteusd.sock, "
	 "/run/proteus/proteusd.sock for root, $XDG_RUNTIME_DIR/"
	 "proteusd.sock otherwise)",
	 NULL, proto_default_socket, NULL},
	{"control_socket_mode", CONFIG_MODE, CFG(control_socket_mode), 0,
	 0777, "0660", CONFIG_IMMUTABLE,
	 "control socket permissions, octal; o+w is refused", NULL, NULL, NULL},
	{"max_clients", CONFIG_INT, CFG(max_clients), 1, 4096, "64",
	 CONFIG_RELOADABLE,
	 "control connections at once; more are answered with an error",
	 NULL, NULL, NULL},
	{"client_timeout_ms", CONFIG_INT, CFG(client_timeout_ms), 100,
	 3600000, "10000", CONFIG_RELOADABLE,
	 "a control client silent this long, or stuck mid-request, is "
	 "disconnected",
	 NULL, NULL, NULL},
	{"metrics_listen", CONFIG_STR, CFG(metrics_listen), 0,
	 CONFIG_NAME_MAX - 1, "", CONFIG_IMMUTABLE,
	 "where /metrics is served for Prometheus, ADDRESS:PORT with a "
	 "numeric address (127.0.0.1:9464, [::1]:9464; empty: off)", NULL,
	 NULL, check_metrics_listen},
	{"metrics_timeout_ms", CONFIG_INT, CFG(metrics_timeout_ms), 100,
	 600000, "10000", CONFIG_IMMUTABLE,
	 "a scraper has this long to send its request, and again this long "
	 "to take the answer, before it is disconnected", NULL, NULL, NULL},
	{"notify_url", CONFIG_STR, CFG(notify_url), 0, CONFIG_URL_MAX - 1,
	 "", CONFIG_RELOADABLE,
	 "every job's events (state changes, eviction notices, losses, "
	 "budget and deadline stops, recovery after a restart) are POSTed "
	 "here as JSON, an http(s) URL without a user or password (empty: "
	 "none); a job's own notify_url gets them too", NULL, NULL,
	 check_endpoint},
	{"notify_command", CONFIG_STR, CFG(notify_command), 0,
	 CONFIG_PATH_MAX - 1, "", CONFIG_RELOADABLE,
	 "a program (absolute path) run for each job event with the event "
	 "as JSON on its standard input (empty: none)", NULL, NULL,
	 check_command},
	{"notify_timeout_ms", CONFIG_INT, CFG(notify_timeout_ms), 100,
	 600000, "10000", CONFIG_RELOADABLE,
	 "a notification's POST attempt, or notify_command's run, ends "
	 "after this long (the command is killed)", NULL, NULL, NULL},
	{"notify_attempts", CONFIG_INT, CFG(notify_attempts), 1, 20, "5",
	 CONFIG_RELOADABLE,
	 "tries per notification before it is counted as failed", NULL,
	 NULL, NULL},
	{"notify_backoff_ms", CONFIG_INT, CFG(notify_backoff_ms), 10, 60000,
	 "1000", CONFIG_RELOADABLE,
	 "the wait before a notification's first retry; it doubles at each "
	 "retry, up to 64 times this", NULL, NULL, NULL},
	{"notify_queue_max", CONFIG_INT, CFG(notify_queue_max), 1, 100000,
	 "1000", CONFIG_RELOADABLE,
	 "notifications waiting per destination; past it the oldest is "
	 "dropped (and counted)", NULL, NULL, NULL},
	{"notify_commands_max", CONFIG_INT, CFG(notify_commands_max), 1, 64,
	 "4", CONFIG_RELOADABLE,
	 "notify_command runs at once (one per job at a time)", NULL, NULL,
	 NULL},
	{"notify_url_allow", CONFIG_STR, CFG(notify_url_allow), 0,
	 CONFIG_LIST_MAX - 1, "", CONFIG_RELOADABLE,
	 "the origins a job's own notify_url may name, "
	 "scheme://host[:port],... (scheme://*: any host whose addresses "
	 "are all public); link-local and metadata addresses never (empty: "
	 "a job's notify_url is refused)", NULL, NULL, check_allow},
	{"data_url_allow", CONFIG_STR, CFG(data_url_allow), 0,
	 CONFIG_LIST_MAX - 1, "", CONFIG_RELOADABLE,
	 "the origins a job's http(s):// data URLs may name, as "
	 "notify_url_allow (empty: refused)", NULL, NULL, check_allow},
	{"data_s3_allowed", CONFIG_ENUM, CFG(data_s3_allowed), 0, 0, "no",
	 CONFIG_RELOADABLE,
	 "whether a job may name its data as s3:// objects, fetched with "
	 "this daemon's AWS credentials (yes) or not (no)", yes_no_choices,
	 NULL, NULL},
	{"checkpoint_s3_prefixes", CONFIG_STR, CFG(checkpoint_s3_prefixes), 0,
	 CONFIG_LIST_MAX - 1, "", CONFIG_RELOADABLE,
	 "where a program job's checkpoint_store may be in S3, which this "
	 "daemon writes with its own AWS credentials: s3://BUCKET[/PREFIX],"
	 "... (a job's store must lie under one, on '/' boundaries; empty: "
	 "none may)", NULL, NULL, check_s3_prefixes},
	{"max_jobs", CONFIG_INT, CFG(max_jobs), 1, 256, "4",
	 CONFIG_RELOADABLE,
	 "jobs running at once; later submissions wait, queued", NULL, NULL,
	 NULL},
	{"stall_seconds", CONFIG_INT, CFG(stall_seconds), 2, 86400, "20",
	 CONFIG_RELOADABLE,
	 "a renting job whose trainer's clock stands this many seconds (and "
	 "half a market hour) has stalled: its trainer restarts from the "
	 "checkpoint once, then the job fails", NULL, NULL, NULL},
	{"local_speedup", CONFIG_INT, CFG(local_speedup), 1, 1200, "60",
	 CONFIG_RELOADABLE,
	 "local world: market seconds per real second (60: a trace minute "
	 "per second, so that a 2-minute notice leaves the trainer 2 s), "
	 "for jobs that do not set world.speedup", NULL, NULL, NULL},
	{"local_max_instances", CONFIG_INT, CFG(local_max_instances), 0,
	 4096, "0", CONFIG_RELOADABLE,
	 "local world: instances (trainer node processes) this host runs "
	 "at once, all jobs together; a job whose reliable tier does not "
	 "fit is refused, its spot fleet capped (0: 8 per online CPU, at "
	 "most one per 256 MiB of memory, at least 2)", NULL, NULL, NULL},
	{"local_trace", CONFIG_STR, CFG(local_trace), 0, CONFIG_PATH_MAX - 1,
	 "", CONFIG_RELOADABLE,
	 "local world: the spot-price trace jobs replay unless they name "
	 "one (empty: the shipped 7-day us-east-1 2016 slice)", NULL, NULL,
	 NULL},
	{"local_ondemand_prices", CONFIG_STR, CFG(local_ondemand_prices), 0,
	 CONFIG_PATH_MAX - 1, "", CONFIG_RELOADABLE,
	 "local world: the on-demand price table (empty: the shipped one "
	 "of the shipped trace's era)", NULL, NULL, NULL},
	{"spot_advisor", CONFIG_STR, CFG(spot_advisor), 0,
	 CONFIG_PATH_MAX - 1, "", CONFIG_RELOADABLE,
	 "per-second billing: the Spot Instance Advisor snapshot whose "
	 "interruption buckets give each type's hazard, for jobs that name "
	 "none (empty: the shipped snapshot of the job's start month)",
	 NULL, NULL, NULL},
	{"data_dir", CONFIG_STR, CFG(data_dir), 0, CONFIG_PATH_MAX - 1, "",
	 CONFIG_RELOADABLE,
	 "the Fashion-MNIST files the jobs' trainer processes read (empty: "
	 "the trainer's default, /usr/share/datasets/fashion-mnist)", NULL,
	 NULL, NULL},
	{"job_dir", CONFIG_STR, CFG(job_dir), 0, CONFIG_PATH_MAX - 1, "",
	 CONFIG_IMMUTABLE,
	 "where each job keeps its sockets and checkpoint (empty: "
	 "<db>.jobs beside the database)", NULL, NULL, NULL},
	{"trainer", CONFIG_STR, CFG(trainer), 0, CONFIG_PATH_MAX - 1, "",
	 CONFIG_RELOADABLE,
	 "the proteus-trainer program (empty: the one beside proteusd)",
	 NULL, NULL, NULL},
	{"stage2_ratio_pct", CONFIG_INT, CFG(stage2_ratio_pct), 1, 100000,
	 "100", CONFIG_RELOADABLE,
	 "reliability tiers: stage 2 once transient/reliable nodes reach "
	 "this, in percent", NULL, NULL, NULL},
	{"stage3_ratio_pct", CONFIG_INT, CFG(stage3_ratio_pct), 1, 100000,
	 "800", CONFIG_RELOADABLE,
	 "reliability tiers: stage 3 from this ratio, in percent", NULL,
	 NULL, NULL},
	{"stage_up_after_s", CONFIG_INT, CFG(stage_up_after_s), 0, 86400,
	 "120", CONFIG_RELOADABLE,
	 "reliability tiers: a spot instance counts towards a higher stage "
	 "once it has been ready this many market seconds", NULL, NULL, NULL},
	{"pool_spot_vcpus", CONFIG_STR, CFG(pool_spot_vcpus), 0,
	 CONFIG_POOL_LIMIT_MAX - 1, "none", CONFIG_RELOADABLE,
	 "the pool all jobs share: the spot vCPUs they may hold at once, in "
	 "total (64), per AWS quota group (standard=64,g=16,p=0; groups "
	 "standard, f, g, inf, p, x, dl, trn, other) or both "
	 "(128,standard=64); none: no limit (see docs/pool.md)", NULL, NULL,
	 check_pool_spot},
	{"pool_ondemand_vcpus", CONFIG_STR, CFG(pool_ondemand_vcpus), 0,
	 CONFIG_POOL_LIMIT_MAX - 1, "none", CONFIG_RELOADABLE,
	 "the pool all jobs share: the on-demand vCPUs (reliable tiers) they "
	 "may hold at once, as pool_spot_vcpus (see docs/pool.md)", NULL,
	 NULL, check_pool_ondemand},
	{"pool_usd_per_hour", CONFIG_STR, CFG(pool_usd_per_hour), 0,
	 CONFIG_NAME_MAX - 1, "none", CONFIG_RELOADABLE,
	 "the pool all jobs share: US dollars an hour their instances may "
	 "cost at once, at the prices now (0 to 1000000, at most 6 decimals; "
	 "none: no budget) (see docs/pool.md)", NULL, NULL, check_pool_usd},
	{"pool_lease_seconds", CONFIG_INT, CFG(pool_lease_seconds), 60, 86400,
	 "3600", CONFIG_RELOADABLE,
	 "the pool all jobs share: seconds a job's share of it holds before "
	 "the arbiter decides again (see docs/pool.md)", NULL, NULL, NULL},
	{"pool_fairness", CONFIG_STR, CFG(pool_fairness), 1,
	 CONFIG_NAME_MAX - 1, "0.8", CONFIG_RELOADABLE,
	 "the pool all jobs share, finish-time arbiter: the share of the jobs "
	 "(above 0, at most 1) with the worst finish-time fairness whose "
	 "shares each round decides again, Themis's f (see docs/pool.md)",
	 NULL, NULL, check_pool_fairness},
	{"pool_arbiter", CONFIG_ENUM, CFG(pool_arbiter), 0, 0, "finish-time",
	 CONFIG_RELOADABLE,
	 "the pool all jobs share: how it is divided when their wants do not "
	 "fit, fifo, max-min, finish-time or goodput (see docs/pool.md)",
	 arbiter_choices, NULL, NULL},
	{"ec2_ami", CONFIG_STR, CFG(ec2_ami), 0, CONFIG_NAME_MAX - 1, "",
	 CONFIG_IMMUTABLE,
	 "ec2 world: the image (ami-...) every instance boots; it has "
	 "proteus-trainer at ec2_node_trainer (empty: not set)", NULL, NULL,
	 check_ami},
	{"ec2_subnets", CONFIG_STR, CFG(ec2_subnets), 0, CONFIG_LIST_MAX - 1,
	 "", CONFIG_IMMUTABLE,
	 "ec2 world: the subnet of each zone instances may launch in, "
	 "ZONE=subnet-ID,ZONE=subnet-ID (one per zone, up to 16; empty: "
	 "not set)", NULL, NULL, check_subnets},
	{"ec2_security_groups", CONFIG_STR, CFG(ec2_security_groups), 0,
	 CONFIG_LIST_MAX - 1, "", CONFIG_IMMUTABLE,
	 "ec2 world: the security groups of every instance, sg-ID,sg-ID (up "
	 "to 8); they must let the head node and the nodes reach each "
	 "other on trainer_ports (empty: not set)", NULL, NULL, check_sgs},
	{"ec2_instance_profile", CONFIG_STR, CFG(ec2_instance_profile), 0,
	 CONFIG_ARN_MAX - 1, "", CONFIG_IMMUTABLE,
	 "ec2 world: the IAM instance profile (a name or an ARN) of every "
	 "instance (empty: not set)", NULL, NULL, check_profile},
	{"ec2_key_name", CONFIG_STR, CFG(ec2_key_name), 0,
	 CONFIG_HOST_MAX - 1, "", CONFIG_IMMUTABLE,
	 "ec2 world: the EC2 key pair instances get, for SSH (empty: none)",
	 NULL, NULL, check_key_name},
	{"head_address", CONFIG_STR, CFG(head_address), 0,
	 CONFIG_HOST_MAX - 1, "", CONFIG_IMMUTABLE,
	 "ec2 world: the host name or IP address the nodes reach this head "
	 "node at (empty: not set)", NULL, NULL, check_head_address},
	{"trainer_ports", CONFIG_STR, CFG(trainer_ports), 1,
	 CONFIG_NAME_MAX - 1, "28000-28999", CONFIG_IMMUTABLE,
	 "ec2 world: the TCP ports the trainer listens on, LO-HI (1024 to "
	 "65535, at least 64), on the head node and on the instances",
	 NULL, NULL, check_ports},
	{"ec2_endpoint", CONFIG_STR, CFG(ec2_endpoint), 0, CONFIG_URL_MAX - 1,
	 "", CONFIG_IMMUTABLE,
	 "ec2 world: the EC2 endpoint, an http(s) URL (empty: "
	 "$AWS_ENDPOINT_URL_EC2, then $AWS_ENDPOINT_URL, then the region's)",
	 NULL, NULL, check_endpoint},
	{"ec2_node_trainer", CONFIG_STR, CFG(ec2_node_trainer), 1,
	 CONFIG_PATH_MAX - 1, "/usr/local/bin/proteus-trainer",
	 CONFIG_IMMUTABLE,
	 "ec2 world: the path of proteus-trainer on the instances", NULL,
	 NULL, check_node_trainer},
	{"ec2_identity_cert", CONFIG_STR, CFG(ec2_identity_cert), 0,
	 CONFIG_PATH_MAX - 1, "", CONFIG_IMMUTABLE,
	 "ec2 world: the region's AWS RSA-2048 certificate (PEM) that signs "
	 "instance identity documents; a node's enrollment is checked "
	 "against it (empty: not set)", NULL, NULL, NULL},
	{"ec2_price_poll_s", CONFIG_INT, CFG(ec2_price_poll_s), 60, 3600,
	 "300", CONFIG_RELOADABLE,
	 "ec2 world: seconds between polls of the live spot prices of a "
	 "running job's markets", NULL, NULL, NULL},
	{"ec2_call_timeout_s", CONFIG_INT, CFG(ec2_call_timeout_s), 1, 300,
	 "10", CONFIG_IMMUTABLE,
	 "ec2 world: seconds one attempt of an EC2 call may take before it "
	 "is given up and tried again", NULL, NULL, NULL},
	{"ec2_hb_timeout_ms", CONFIG_INT, CFG(ec2_hb_timeout_ms), 1000,
	 600000, "5000", CONFIG_RELOADABLE,
	 "ec2 world: milliseconds of silence after which a job's "
	 "coordinator declares a node lost", NULL, NULL, NULL},
	{"ec2_clock_speedup", CONFIG_INT, CFG(ec2_clock_speedup), 1, 1200,
	 "1", CONFIG_IMMUTABLE,
	 "ec2 world against a fake EC2 only: world seconds per real second, "
	 "as the fake's clock runs", NULL, NULL, NULL},
	{"ec2_clock_origin", CONFIG_INT, CFG(ec2_clock_origin), 0,
	 INT64_C(4102444800), "0", CONFIG_IMMUTABLE,
	 "ec2 world against a fake EC2 only: the Unix second the sped-up "
	 "clock runs from, as the fake's (0: the daemon's start)", NULL,
	 NULL, NULL},
};

#define CONFIG_NKEYS (sizeof(config_table) / sizeof(config_table[0]))

const struct config_key *config_keys(size_t *ret_n)
{
	*ret_n = CONFIG_NKEYS;
	return config_table;
}

const struct config_key *config_key_find(const char *name)
{
	for (size_t i = 0; i < CONFIG_NKEYS; i++)
		if (!strcmp(config_table[i].name, name))
			return &config_table[i];
	return NULL;
}

void config_diag_release(struct config_diag *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->msgs[i]);
	free(d->msgs);
	*d = (struct config_diag){0};
}

#define diag_add config_diag_add
void config_diag_add(struct config_diag *d, const char *fmt, ...)
{
	va_list ap;
	char *m = NULL, **nm;

	if (!d)
		return;
	if (d->n >= CONFIG_DIAG_MAX) {
		d->dropped++;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	nm = m ? px_reallocarray(d->msgs, d->n + 1, sizeof(*nm)) : NULL;
	if (!nm) {
		free(m);
		d->dropped++;
		return;
	}
	nm[d->n++] = m;
	d->msgs = nm;
}

/* Parse and check one value; on failure write why into why. */
static bool set_value(const struct config_key *k,
		      struct proteusd_config *cfg, const char *val,
		      char *why, size_t wlen)
{
	char *field = (char *)cfg + k->offset, *end;
	const char *sep;
	size_t n = strlen(val);
	long long v;

	switch (k->type) {
	case CONFIG_STR:
		if ((int64_t)n < k->min || (int64_t)n > k->max) {
			snprintf(why, wlen, "length %zu is outside %" PRId64
				 "..%" PRId64 " bytes", n, k->min, k->max);
			return false;
		}
		if (k->check && !k->check(val, cfg, why, wlen))
			return false;
		memcpy(field, val, n + 1);
		return true;
	case CONFIG_INT:
		errno = 0;
		v = strtoll(val, &end, 10);
		if (!n || *end || errno || (val[0] != '-' && (val[0] < '0' ||
							    val[0] > '9'))) {
			snprintf(why, wlen, "'%.64s' is not an integer", val);
			return false;
		}
		if (v < k->min || v > k->max) {
			snprintf(why, wlen, "%lld is outside %" PRId64
				 "..%" PRId64, v, k->min, k->max);
			return false;
		}
		memcpy(field, &(int64_t){v}, sizeof(int64_t));
		return true;
	case CONFIG_MODE:
		if (n < 1 || n > 4 || strspn(val, "01234567") != n) {
			snprintf(why, wlen, "'%.64s' is not an octal mode "
				 "such as 0660", val);
			return false;
		}
		v = strtoll(val, NULL, 8);
		if (v < k->min || v > k->max) {
			snprintf(why, wlen, "mode %04llo is outside %04" PRIo64
				 "..%04" PRIo64, v, k->min, k->max);
			return false;
		}
		if (v & 02) {
			snprintf(why, wlen, "mode %04llo lets any user write "
				 "(o+w); use 0660 or tighter", v);
			return false;
		}
		memcpy(field, &(int){(int)v}, sizeof(int));
		return true;
	case CONFIG_ENUM:
		for (const struct config_choice *c = k->choices; c->name; c++)
			if (!strcmp(c->name, val) && c->refused) {
				snprintf(why, wlen, "'%s' %s", c->name,
					 c->refused);
				return false;
			} else if (!strcmp(c->name, val)) {
				memcpy(field, &c->value, sizeof(int));
				return true;
			}
		n = (size_t)snprintf(why, wlen, "'%.64s' is not one of", val);
		sep = " ";
		for (const struct config_choice *c = k->choices;
		     c->name && n < wlen; c++)
			if (!c->refused) {
				n += (size_t)snprintf(why + n, wlen - n, "%s%s",
						      sep, c->name);
				sep = ", ";
			}
		return false;
	}
	snprintf(why, wlen, "bad table entry");
	return false;
}

void config_format_default(const struct config_key *k, char *buf,
			   size_t len)
{
	if (k->dflt)
		snprintf(buf, len, "%s", k->dflt);
	else if (k->dflt_fn(buf, len) != PX_OK)
		snprintf(buf, len, "(none)");
}

enum px_err config_defaults(struct proteusd_config *cfg,
			    struct config_diag *d)
{
	char buf[CONFIG_PATH_MAX], why[256];
	enum px_err r = PX_OK, e;

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		const struct config_key *k = &config_table[i];

		if (!k->dflt && (e = k->dflt_fn(buf, sizeof(buf))) != PX_OK) {
			diag_add(d, "'%s': %s", k->name,
				 e == PX_ETOOBIG ?
					 "default is too long" :
					 "no default: set PROTEUS_DB or HOME");
			r = PX_EINVAL;
			continue;
		}
		if (!set_value(k, cfg, k->dflt ? k->dflt : buf, why,
			       sizeof(why))) {
			diag_add(d, "'%s': default: %s", k->name, why);
			r = PX_EINVAL;
		}
	}
	return r;
}

/* Trim blanks at both ends in place; returns the new start. */
static char *trim(char *s)
{
	char *e;

	s += strspn(s, " \t\r");
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Split one line into key and value (in place); false for a blank or
 * comment line. */
static bool split_line(char *line, char **ret_key, char **ret_val)
{
	char *key = trim(line), *val, *hash;

	if (!*key || *key == '#')
		return false;
	val = key + strcspn(key, " \t");
	if (*val)
		*val++ = '\0';
	for (hash = val; (hash = strchr(hash, '#')); hash++)
		if (hash == val || hash[-1] == ' ' || hash[-1] == '\t') {
			*hash = '\0';
			break;
		}
	*ret_key = key;
	*ret_val = trim(val);
	return true;
}

enum px_err config_parse(const char *name, const char *text, size_t len,
			 struct proteusd_config *ret, struct config_diag *d)
{
	struct proteusd_config cfg;
	unsigned seen[CONFIG_NKEYS] = {0}; /* line a key was set on */
	char line[CONFIG_LINE_MAX + 1], why[256], *key, *val;
	const struct config_key *k;
	unsigned lineno = 0;
	bool bad = false;
	size_t pos = 0, n;

	if (config_defaults(&cfg, d) != PX_OK)
		return PX_EINVAL;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);

		n = nl ? (size_t)(nl - text) - pos : len - pos;
		lineno++;
		if (n > CONFIG_LINE_MAX || memchr(text + pos, '\0', n)) {
			diag_add(d, "%s:%u: line is over %d bytes or holds a "
				 "NUL byte", name, lineno, CONFIG_LINE_MAX);
			bad = true;
			pos += n + 1;
			continue;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + 1;
		if (!split_line(line, &key, &val))
			continue;
		k = config_key_find(key);
		if (!k) {
			diag_add(d, "%s:%u: '%.64s': unknown key", name,
				 lineno, key);
			bad = true;
			continue;
		}
		if (seen[k - config_table]) {
			diag_add(d, "%s:%u: '%s': given again (first on line "
				 "%u)", name, lineno, k->name,
				 seen[k - config_table]);
			bad = true;
			continue;
		}
		seen[k - config_table] = lineno;
		/* "" is the empty string, for the keys that may be empty
		 * (what config_format writes for one) */
		if (k->type == CONFIG_STR && !strcmp(val, "\"\""))
			val[0] = '\0';
		else if (!*val)
			val = NULL;
		if (!val) {
			diag_add(d, "%s:%u: '%s': no value", name, lineno,
				 k->name);
			bad = true;
		} else if (!set_value(k, &cfg, val, why, sizeof(why))) {
			diag_add(d, "%s:%u: '%s': %s", name, lineno, k->name,
				 why);
			bad = true;
		}
	}
	if (bad)
		return PX_EINVAL;
	*ret = cfg;
	return PX_OK;
}

enum px_err config_load(const char *path, struct proteusd_config *ret,
			struct config_diag *d)
{
	char *text = NULL;
	size_t n = 0;
	enum px_err r;
	ssize_t k;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		diag_add(d, "%s: cannot open: %s", path, strerror(errno));
		return PX_ESYS | errno;
	}
	text = malloc(CONFIG_FILE_MAX + 1);
	if (!text) {
		close(fd);
		return PX_ENOMEM;
	}
	while ((k = read(fd, text + n, CONFIG_FILE_MAX + 1 - n)) > 0)
		n += (size_t)k;
	if (k < 0) {
		diag_add(d, "%s: cannot read: %s", path, strerror(errno));
		r = PX_ESYS | errno;
	} else if (n > CONFIG_FILE_MAX) {
		diag_add(d, "%s: file is over %d bytes", path,
			 CONFIG_FILE_MAX);
		r = PX_ETOOBIG;
	} else {
		r = config_parse(path, text, n, ret, d);
	}
	free(text);
	close(fd);
	return r;
}

bool config_equal(const struct config_key *k, const struct proteusd_config *a,
		  const struct proteusd_config *b)
{
	const char *fa = (const char *)a + k->offset;
	const char *fb = (const char *)b + k->offset;

	switch (k->type) {
	case CONFIG_STR:
		return !strcmp(fa, fb);
	case CONFIG_INT:
		return !memcmp(fa, fb, sizeof(int64_t));
	case CONFIG_MODE:
	case CONFIG_ENUM:
		return !memcmp(fa, fb, sizeof(int));
	}
	return false;
}

unsigned config_reload(struct proteusd_config *cur,
		       const struct proteusd_config *next,
		       struct config_diag *refused)
{
	unsigned changed = 0;
	char was[CONFIG_PATH_MAX], now[CONFIG_PATH_MAX];

	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		const struct config_key *k = &config_table[i];
		size_t sz = k->type == CONFIG_STR  ? (size_t)k->max + 1
			    : k->type == CONFIG_INT ? sizeof(int64_t)
						    : sizeof(int);

		if (config_equal(k, cur, next))
			continue;
		if (k->flags & CONFIG_IMMUTABLE) {
			config_format(k, cur, was, sizeof(was));
			config_format(k, next, now, sizeof(now));
			diag_add(refused, "'%s' cannot change from '%s' to "
				 "'%s' without a restart; keeping '%s'",
				 k->name, was, now, was);
			continue;
		}
		memcpy((char *)cur + k->offset, (const char *)next + k->offset,
		       sz);
		/* what the value parses into comes along (next's passed) */
		if (k->check)
			(void)k->check((char *)cur + k->offset, cur, was,
				       sizeof was);
		changed++;
	}
	return changed;
}

void config_format(const struct config_key *k,
		   const struct proteusd_config *cfg, char *buf, size_t len)
{
	const char *f = (const char *)cfg + k->offset;
	int64_t i64;
	int i;

	switch (k->type) {
	case CONFIG_STR:
		snprintf(buf, len, "%s", *f ? f : "\"\"");
		return;
	case CONFIG_INT:
		memcpy(&i64, f, sizeof(i64));
		snprintf(buf, len, "%" PRId64, i64);
		return;
	case CONFIG_MODE:
		memcpy(&i, f, sizeof(i));
		snprintf(buf, len, "%04o", (unsigned)i);
		return;
	case CONFIG_ENUM:
		memcpy(&i, f, sizeof(i));
		for (const struct config_choice *c = k->choices; c->name; c++)
			if (c->value == i) {
				snprintf(buf, len, "%s", c->name);
				return;
			}
		snprintf(buf, len, "%d", i);
		return;
	}
}

json_t *config_to_json(const struct proteusd_config *cfg)
{
	json_t *o = json_object(), *v;
	char buf[CONFIG_PATH_MAX];
	int64_t i64;

	if (!o)
		return NULL;
	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		const struct config_key *k = &config_table[i];

		if (k->type == CONFIG_INT) {
			memcpy(&i64, (const char *)cfg + k->offset,
			       sizeof(i64));
			v = json_integer(i64);
		} else if (k->type == CONFIG_STR) {
			v = json_string((const char *)cfg + k->offset);
		} else {
			config_format(k, cfg, buf, sizeof(buf));
			v = json_string(buf);
		}
		if (json_object_set_new(o, k->name, v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* Whether a is an address of this host: a TCP socket binds to it (port
 * 0: any).  0, or the errno of the bind. */
static int bind_probe(const struct sockaddr *a, socklen_t len)
{
	int fd = socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), r = 0;

	if (fd < 0)
		return errno;
	if (bind(fd, a, len) < 0)
		r = errno;
	close(fd);
	return r;
}

enum px_err config_head_bind(const struct proteusd_config *c, char *buf,
			     size_t len, struct px_error *err)
{
	const char *h = c->head_address;
	struct addrinfo hints = {
		.ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
	}, *ai = NULL;
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	char num[INET6_ADDRSTRLEN] = "";
	int r;

	if (!h[0])
		return px_errorf(err, PX_EINVAL, "head_address is not set");
	if (inet_pton(AF_INET6, h, &a6.sin6_addr) == 1) {
		inet_ntop(AF_INET6, &a6.sin6_addr, num, sizeof num);
		r = bind_probe((struct sockaddr *)&a6, sizeof a6);
	} else if (inet_pton(AF_INET, h, &a4.sin_addr) == 1) {
		inet_ntop(AF_INET, &a4.sin_addr, num, sizeof num);
		r = bind_probe((struct sockaddr *)&a4, sizeof a4);
	} else {
		/* IPv4: nanomsg's sockets are IPv4-only by default
		 * (NN_IPV4ONLY), the nodes' connects to the name too */
		r = getaddrinfo(h, NULL, &hints, &ai);
		if (r != 0 || !ai)
			return px_errorf(err, PX_EINVAL, "head_address '%s' "
					 "does not resolve to an IPv4 address "
					 "here: %s", h, r == EAI_SYSTEM ?
					 strerror(errno) : gai_strerror(r));
		memcpy(&a4, ai->ai_addr, sizeof a4);
		a4.sin_port = 0;
		freeaddrinfo(ai);
		inet_ntop(AF_INET, &a4.sin_addr, num, sizeof num);
		r = bind_probe((struct sockaddr *)&a4, sizeof a4);
	}
	if (r == EADDRNOTAVAIL)
		return px_errorf(err, PX_EINVAL, "head_address '%s'%s%s%s is "
				 "not an address of this host: the enrollment "
				 "endpoint and the coordinators listen there",
				 h, strcmp(h, num) ? " (" : "",
				 strcmp(h, num) ? num : "",
				 strcmp(h, num) ? ")" : "");
	if (r != 0)
		return px_errorf(err, PX_ESYS | r, "head_address '%s': cannot "
				 "listen at %s: %s", h, num, strerror(r));
	if (strlen(num) >= len)
		return px_errorf(err, PX_ETOOBIG, "head_address: %s does not "
				 "fit", num);
	snprintf(buf, len, "%s", num);
	return PX_OK;
}

size_t config_warnings(const struct proteusd_config *c,
		       struct config_diag *d)
{
	size_t n0 = d->n + d->dropped;

	if (!strcmp(c->metrics_host, "0.0.0.0") ||
	    !strcmp(c->metrics_host, "::"))
		diag_add(d, "metrics_listen %s: /metrics is served on every "
			 "interface of this host, to anyone who reaches it "
			 "(job names, costs, users' jobs); give one address "
			 "(127.0.0.1:%d, or the monitoring network's) unless "
			 "a firewall stands in front", c->metrics_listen,
			 c->metrics_port);
	return d->n + d->dropped - n0;
}

const char *config_ec2_subnet(const struct proteusd_config *c,
			      const char *zone)
{
	for (int i = 0; i < c->ec2_subnet_count; i++)
		if (!strcmp(c->ec2_subnet[i].zone, zone))
			return c->ec2_subnet[i].subnet;
	return NULL;
}
