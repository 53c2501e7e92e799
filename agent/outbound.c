/* outbound.c -- a job's URLs held to the operator's allow-lists
 * (outbound.h): the lists' origins, a URL's origin (libcurl's URL
 * parser), its addresses (getaddrinfo) and the rule for each address.
 */
#include "outbound.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "../cloudapi/fetch.h"
#include "../trainer/io/data_url.h"
#include "../trainer/io/dataset.h"

#define ADDRS_MAX 32             /* a name's addresses looked at */

/* An origin: a list's entry or a URL's. */
struct origin {
	char scheme[8];              /* "http" or "https" */
	char host[CONFIG_HOST_MAX];  /* lower case, an IPv6 one without
				      * brackets; "*": any public host */
	int port;                    /* 0 in an entry of host "*": any */
};

static int default_port(const char *scheme)
{
	return strcmp(scheme, "https") ? 80 : 443;
}

static void lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

/* The literal address host is (false: a name), into *ss. */
static bool literal(const char *host, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)(void *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)(void *)ss;

	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		return true;
	}
	return false;
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)(const void *)a)->
			       sin_addr, &((const struct sockaddr_in *)
					   (const void *)b)->sin_addr, 4);
	return !memcmp(&((const struct sockaddr_in6 *)(const void *)a)->
		       sin6_addr, &((const struct sockaddr_in6 *)
				    (const void *)b)->sin6_addr, 16);
}

static void addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *bits = sa->sa_family == AF_INET6 ?
		(const void *)&((const struct sockaddr_in6 *)(const void *)sa)->
			sin6_addr :
		(const void *)&((const struct sockaddr_in *)(const void *)sa)->
			sin_addr;

	if (!inet_ntop(sa->sa_family, bits, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

/* One entry of a list: scheme://host[:port], or the host "*"; an
 * optional trailing '/'.  false: why. */
static bool parse_entry(const char *s, size_t n, struct origin *o,
			char *why, size_t wlen)
{
	char e[CONFIG_HOST_MAX + 32], *h, *end, *colon = NULL;
	struct sockaddr_storage ss;
	unsigned long port;

	memset(o, 0, sizeof *o);
	if (n >= sizeof e)
		goto bad;
	memcpy(e, s, n);
	e[n] = '\0';
	if (n && e[n - 1] == '/')
		e[--n] = '\0';
	if (!strncasecmp(e, "https://", 8))
		h = e + 8;
	else if (!strncasecmp(e, "http://", 7))
		h = e + 7;
	else
		goto bad;
	snprintf(o->scheme, sizeof o->scheme, "%.*s", (int)(h - 3 - e), e);
	lower(o->scheme);
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end || (end[1] && end[1] != ':'))
			goto bad;
		*end = '\0';
		colon = end[1] ? end + 1 : NULL;
		h++;
		if (!literal(h, &ss) || ss.ss_family != AF_INET6)
			goto bad;
	} else {
		colon = strchr(h, ':');
		if (colon)
			*colon = '\0';
	}
	if (!*h || strpbrk(h, "/?#@ \t") || strlen(h) >= sizeof o->host)
		goto bad;
	memcpy(o->host, h, strlen(h) + 1);      /* it fits: above */
	lower(o->host);
	if (colon) {
		size_t pn = strlen(colon + 1);

		port = strtoul(colon + 1, NULL, 10);
		if (!pn || pn > 5 || strspn(colon + 1, "0123456789") != pn ||
		    !port || port > 65535)
			goto bad;
		o->port = (int)port;
	} else {
		o->port = strcmp(o->host, "*") ? default_port(o->scheme) : 0;
	}
	if (strchr(o->host, '*') && strcmp(o->host, "*"))
		goto bad;
	return true;
bad:
	snprintf(why, wlen, "'%.*s' is not an origin (http(s)://HOST[:PORT], "
		 "or http(s)://* for any public host)", (int)(n > 64 ? 64 : n),
		 s);
	return false;
}

/* The list's entries, each by fn(entry, ctx) until it returns true
 * (then true).  Entries are separated by commas, blanks around them. */
static bool each_entry(const char *list, bool (*fn)(const struct origin *,
						    void *), void *ctx)
{
	const char *p = list;
	struct origin o;
	char why[128];

	while (*p) {
		size_t n;

		p += strspn(p, " \t,");
		n = strcspn(p, ",");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n && parse_entry(p, n, &o, why, sizeof why) && fn(&o, ctx))
			return true;
		p += n;
		p += strcspn(p, ",");
	}
	return false;
}

bool outbound_allow_valid(const char *list, char *why, size_t wlen)
{
	const char *p = list;
	struct origin o;
	int k = 0;

	while (*p) {
		size_t n;

		p += strspn(p, " \t");
		n = strcspn(p, ",");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (!parse_entry(p, n, &o, why, wlen))
			return false;
		if (++k > OUTBOUND_ALLOW_MAX) {
			snprintf(why, wlen, "more than %d origins",
				 OUTBOUND_ALLOW_MAX);
			return false;
		}
		p += n;
		p += strspn(p, " \t");
		if (*p == ',')
			p++;
	}
	return true;
}

/* A URL's origin (libcurl's parser: the port the scheme implies when
 * none is given).  false: not an http(s) URL curl reads. */
static bool url_origin(const char *url, struct origin *o)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *end;
	bool ok = false;
	size_t n;
	long v;

	memset(o, 0, sizeof *o);
	if (!h)
		return false;
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) !=
	    CURLUE_OK)
		goto out;
	if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))
		goto out;
	snprintf(o->scheme, sizeof o->scheme, "%s", scheme);
	lower(o->scheme);
	n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']')
		snprintf(o->host, sizeof o->host, "%.*s", (int)n - 2,
			 host + 1);
	else
		snprintf(o->host, sizeof o->host, "%s", host);
	/* a zone id ("fe80::1%eth0") is no address we reach */
	if (strchr(o->host, '%'))
		goto out;
	lower(o->host);
	/* curl gives the port as decimal digits; anything else, or out of
	 * range, is no origin */
	errno = 0;
	v = strtol(port, &end, 10);
	if (errno || end == port || *end || v <= 0 || v > 65535)
		goto out;
	o->port = (int)v;
	ok = true;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(h);
	return ok;
}

/* What one address of a URL is held to. */
struct addr_rule {
	const struct origin *u;          /* the URL's */
	const struct sockaddr *sa;       /* the address */
};

static bool entry_allows(const struct origin *e, void *ctx)
{
	const struct addr_rule *r = ctx;
	struct sockaddr_storage ss;

	if (strcmp(e->scheme, r->u->scheme))
		return false;
	if (!strcmp(e->host, "*"))
		return fetch_addr_class(r->sa) == FETCH_ADDR_PUBLIC &&
		       (!e->port || e->port == r->u->port);
	if (e->port != r->u->port)
		return false;
	if (!strcmp(e->host, r->u->host))
		return true;
	/* another name for the entry's address */
	return literal(e->host, &ss) && same_addr((struct sockaddr *)&ss,
						  r->sa);
}

/* Whether the daemon's /metrics listens at sa:port. */
static bool is_metrics(const struct proteusd_config *cfg,
		       const struct sockaddr *sa, int port)
{
	struct sockaddr_storage ss;

	if (!cfg->metrics_port || port != cfg->metrics_port)
		return false;
	if (fetch_addr_class(sa) == FETCH_ADDR_LOOPBACK)
		return true;
	/* 0.0.0.0 or :: listens on every address of this host; another
	 * address is the one it listens on */
	return !literal(cfg->metrics_host, &ss) ||
	       fetch_addr_class((struct sockaddr *)&ss) == FETCH_ADDR_NEVER ||
	       same_addr((struct sockaddr *)&ss, sa);
}

/* One address of u against list (named key in messages); data: the
 * trainer's own rule too (a loopback address only for a URL naming this
 * host, as cloudapi/fetch.c holds it when it connects).  false: why. */
static bool addr_ok(const struct proteusd_config *cfg, const char *key,
		    const char *list, const struct origin *u, bool data,
		    const struct sockaddr *sa, char *why, size_t wlen)
{
	struct addr_rule r = { .u = u, .sa = sa };
	enum fetch_addr_class c = fetch_addr_class(sa);
	struct sockaddr_storage ss;
	char ip[INET6_ADDRSTRLEN];
	/* the URL names this host: a loopback address or localhost, as
	 * cloudapi/fetch.c's host_loopback has it */
	bool host_loopback = !strcmp(u->host, "localhost") ||
			     (literal(u->host, &ss) &&
			      c == FETCH_ADDR_LOOPBACK);

	addr_text(sa, ip, sizeof ip);
	if (c == FETCH_ADDR_NEVER) {
		snprintf(why, wlen, "%s is a link-local, metadata or "
			 "unspecified address, which no job reaches", ip);
		return false;
	}
	if (is_metrics(cfg, sa, u->port)) {
		snprintf(why, wlen, "%s port %d is this daemon's own /metrics",
			 ip, u->port);
		return false;
	}
	if (data && c == FETCH_ADDR_LOOPBACK && !host_loopback) {
		snprintf(why, wlen, "%s resolves to %s, a loopback address: "
			 "name this host as 127.0.0.1, ::1 or localhost",
			 u->host, ip);
		return false;
	}
	if (each_entry(list, entry_allows, &r))
		return true;
	if (strcmp(ip, u->host))
		snprintf(why, wlen, "%s://%s:%d (address %s) is not allowed by "
			 "%s", u->scheme, u->host, u->port, ip, key);
	else
		snprintf(why, wlen, "%s://%s:%d is not allowed by %s",
			 u->scheme, u->host, u->port, key);
	return false;
}

/* u's addresses (a literal is its own), each held to addr_ok.  false:
 * why. */
static bool origin_ok(const struct proteusd_config *cfg, const char *key,
		      const char *list, const struct origin *u, bool data,
		      char *why, size_t wlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_family = AF_UNSPEC };
	struct addrinfo *res = NULL, *ai;
	struct sockaddr_storage ss;
	bool ok = true;
	int k = 0, r;

	if (!*list) {
		snprintf(why, wlen, "%s is empty on this daemon: it allows no "
			 "such URL", key);
		return false;
	}
	if (literal(u->host, &ss))
		return addr_ok(cfg, key, list, u, data, (struct sockaddr *)&ss,
			       why, wlen);
	r = getaddrinfo(u->host, NULL, &hints, &res);
	if (r) {
		snprintf(why, wlen, "%s: cannot resolve it: %s", u->host,
			 gai_strerror(r));
		return false;
	}
	for (ai = res; ai && ok && k < ADDRS_MAX; ai = ai->ai_next, k++)
		ok = addr_ok(cfg, key, list, u, data, ai->ai_addr, why, wlen);
	freeaddrinfo(res);
	return ok;
}

bool outbound_addr_never(const struct sockaddr *sa)
{
	return fetch_addr_class(sa) == FETCH_ADDR_NEVER;
}

bool outbound_notify_addr_ok(const struct proteusd_config *cfg,
			     const char *url, bool job,
			     const struct sockaddr *sa, socklen_t salen,
			     char *why, size_t wlen)
{
	struct origin u;
	char ip[INET6_ADDRSTRLEN];

	(void)salen;
	if (!job) {      /* the operator's own: anything but the never */
		if (!outbound_addr_never(sa))
			return true;
		addr_text(sa, ip, sizeof ip);
		snprintf(why, wlen, "%s is a link-local, metadata or "
			 "unspecified address, which is never reached", ip);
		return false;
	}
	if (!url_origin(url, &u)) {
		snprintf(why, wlen, "not an http(s) URL");
		return false;
	}
	return addr_ok(cfg, "notify_url_allow", cfg->notify_url_allow, &u,
		       false, sa, why, wlen);
}

/* Whether the authority of url (scheme://AUTHORITY/...) has a user or
 * password. */
static bool has_userinfo(const char *url)
{
	const char *a = strstr(url, "://");

	if (!a)
		return false;
	a += 3;
	return memchr(a, '@', strcspn(a, "/?#")) != NULL;
}

/* trainer.data.<field>, a URL: what the trainer can fetch and the
 * operator allows. */
static enum px_err check_url(const struct proteusd_config *cfg,
			     const char *name, const char *field,
			     const char *url, struct px_error *err)
{
	char shown[FETCH_SHOWN_MAX], why[512];
	struct fetch_url fu;
	struct px_error pe = {0};
	struct origin u;
	enum px_err e;

	fetch_url_shown(url, shown, sizeof shown);
	if (has_userinfo(url))
		return px_errorf(err, PX_EINVAL, "%s: %s: %s: the "
				 "URL holds a user or password: credentials "
				 "never go in a job spec", name, field, shown);
	e = fetch_url_parse(url, &fu, &pe);
	if (e != PX_OK)
		return px_errorf(err, e, "%s: %s: %s", name,
				 field, pe.msg);
	switch (fu.kind) {
	case FETCH_LOCAL:      /* file://: held to the submitter's rights
				* like a path (jobs_submit.c) */
		break;
	case FETCH_S3:
		if (!cfg->data_s3_allowed)
			e = px_errorf(err, PX_EINVAL, "%s: %s: %s: "
				      "s3:// data is fetched with this "
				      "daemon's AWS credentials, and "
				      "data_s3_allowed is no on this daemon",
				      name, field, shown);
		break;
	case FETCH_HTTP:
		if (fu.plain && !fu.loopback)
			e = px_errorf(err, PX_EINVAL, "%s: %s: %s: "
				      "http:// only to this host (127.0.0.1, "
				      "::1, localhost); use https://", name,
				      field, shown);
		else if (!url_origin(url, &u))
			e = px_errorf(err, PX_EINVAL, "%s: %s: %s: "
				      "not a URL curl can read", name, field,
				      shown);
		else if (!origin_ok(cfg, "data_url_allow", cfg->data_url_allow,
				    &u, true, why, sizeof why))
			e = px_errorf(err, PX_EINVAL, "%s: %s: %s: "
				      "%s", name, field, shown, why);
		break;
	}
	fetch_url_release(&fu);
	return e;
}

/* A data file by URL: its origin, then its format by its name. */
static enum px_err check_data_url(const struct job_request *req,
				  const struct proteusd_config *cfg,
				  const char *name, const char *field,
				  const char *url, struct px_error *err)
{
	char shown[FETCH_SHOWN_MAX], path[32];
	struct px_error pe = {0};
	enum data_format f;
	enum px_err e;

	snprintf(path, sizeof path, "trainer.data.%s", field);
	e = check_url(cfg, name, path, url, err);
	if (e != PX_OK)
		return e;
	fetch_url_shown(url, shown, sizeof shown);
	/* the trainer tells the format by the URL's name: refused now,
	 * not once the job runs */
	if (req->trainer.data.format[0]) {
		if (data_format_parse(req->trainer.data.format, &f, &pe) !=
		    PX_OK)
			f = DATA_FMT_AUTO;
	} else if (data_url_format(url, &f, &pe) != PX_OK) {
		return px_errorf(err, PX_EINVAL, "%s: trainer.data.%s: %s", name,
				 field, pe.msg);
	}
	if (f == DATA_FMT_IDX)
		return px_errorf(err, PX_EINVAL, "%s: trainer.data.%s: %s: an "
				 "IDX set by URL is not supported (its labels "
				 "file is found by its name): use LIBSVM or "
				 "CSV, or a path", name, field, shown);
	return PX_OK;
}

enum px_err outbound_check_job(const struct job_request *req,
			       const struct proteusd_config *cfg,
			       const char *name, struct px_error *err)
{
	const struct job_data *d = &req->trainer.data;
	char why[512];
	struct origin u;
	enum px_err e = PX_OK;

	if (req->notify_url[0]) {
		if (!url_origin(req->notify_url, &u))
			return px_errorf(err, PX_EINVAL, "%s: notify_url: not "
					 "an http(s) URL curl can read", name);
		if (!origin_ok(cfg, "notify_url_allow", cfg->notify_url_allow,
			       &u, false, why, sizeof why))
			return px_errorf(err, PX_EINVAL, "%s: notify_url: %s",
					 name, why);
	}
	if (d->train[0] && data_is_url(d->train))
		e = check_data_url(req, cfg, name, "train", d->train, err);
	if (e == PX_OK && d->test[0] && data_is_url(d->test))
		e = check_data_url(req, cfg, name, "test", d->test, err);
	/* a program's code by URL: each node fetches it, under the same
	 * rules as data */
	if (e == PX_OK && req->program.on && data_is_url(req->program.code))
		e = check_url(cfg, name, "program.code", req->program.code,
			      err);
	return e;
}
