/* imds.c -- IMDSv2 client: session token, spot interruption notice,
 * rebalance recommendation, instance identity and role credentials.
 * Blocking libcurl easy calls with a short timeout; JSON via jansson.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "imds.h"

struct imds_client {
	CURL *h;
	char *base;          /* no trailing slash */
	long timeout_ms;
	char token[256];
	uint64_t token_until_us; /* monotonic */
	unsigned token_fetches;
};

struct buf {
	char *p;
	size_t len;
	bool too_big;
};

static size_t write_cb(char *p, size_t sz, size_t nm, void *ud)
{
	struct buf *b = ud;
	size_t n = sz * nm;
	char *q;

	if (n > IMDS_BODY_MAX - b->len) {
		b->too_big = true;
		return 0;
	}
	q = realloc(b->p, b->len + n + 1);
	if (!q)
		return 0;
	b->p = q;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

enum px_err imds_client_new(const char *endpoint, uint64_t timeout_us,
			    struct imds_client **ret, struct px_error *err)
{
	struct imds_client *c;
	size_t n;

	if (!endpoint || !*endpoint)
		endpoint = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	if (!endpoint || !*endpoint)
		endpoint = "http://169.254.169.254";
	if (strncmp(endpoint, "http://", 7) != 0)
		return px_errorf(err, PX_EINVAL, "imds endpoint '%s': not an "
				 "http url", endpoint);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return px_errorf(err, PX_EHTTP, "curl_global_init failed");
	c = px_calloc(1, sizeof *c);
	if (!c)
		return px_errorf(err, PX_ENOMEM, "imds client");
	c->base = strdup(endpoint);
	c->h = curl_easy_init();
	if (!c->base || !c->h) {
		imds_client_free(c);
		return px_errorf(err, PX_ENOMEM, "imds client");
	}
	n = strlen(c->base);
	while (n > 0 && c->base[n - 1] == '/')
		c->base[--n] = '\0';
	c->timeout_ms = timeout_us ? (long)(timeout_us / 1000) : 1000;
	if (c->timeout_ms < 1)
		c->timeout_ms = 1;
	*ret = c;
	return PX_OK;
}

void imds_client_free(struct imds_client *c)
{
	if (!c)
		return;
	if (c->h)
		curl_easy_cleanup(c->h);
	explicit_bzero(c->token, sizeof c->token);
	free(c->base);
	free(c);
}

unsigned imds_token_fetches(const struct imds_client *c)
{
	return c->token_fetches;
}

/* One request.  put: the token PUT.  Returns PX_OK with *status set for
 * any HTTP answer; transport failures are PX_EHTTP. */
static enum px_err request(struct imds_client *c, const char *path,
			   bool put, long *status, struct buf *b,
			   struct px_error *err)
{
	char url[1024], hdr[300];
	struct curl_slist *h = NULL, *t;
	CURLcode cc;

	if ((size_t)snprintf(url, sizeof url, "%s%s", c->base, path) >=
	    sizeof url)
		return px_errorf(err, PX_EINVAL, "imds path '%s' too long",
				 path);
	if (put)
		snprintf(hdr, sizeof hdr,
			 "X-aws-ec2-metadata-token-ttl-seconds: %d",
			 IMDS_TOKEN_TTL_S);
	else
		snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s",
			 c->token);
	t = curl_slist_append(h, hdr);
	explicit_bzero(hdr, sizeof hdr);
	if (!t)
		return px_errorf(err, PX_ENOMEM, "imds headers");
	h = t;
	curl_easy_reset(c->h);
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(c->h, CURLOPT_USERAGENT, "proteus/" PX_VERSION);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, b);
	if (put) {
		curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	cc = curl_easy_perform(c->h);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(h);
	if (cc != CURLE_OK)
		return px_errorf(err, b->too_big ? PX_ETOOBIG : PX_EHTTP,
				 "imds '%s': %s", path,
				 b->too_big ? "response too large" :
				 curl_easy_strerror(cc));
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, status);
	return PX_OK;
}

static enum px_err fetch_token(struct imds_client *c, struct px_error *err)
{
	struct buf b = { 0 };
	long st = 0;
	enum px_err rc;

	rc = request(c, "/latest/api/token", true, &st, &b, err);
	if (rc != PX_OK)
		goto out_free;
	if (st != 200 || !b.p || b.len == 0 || b.len >= sizeof c->token ||
	    strpbrk(b.p, "\r\n")) {
		rc = px_errorf(err, st == 403 ? PX_EUNSUPP : PX_EPROTO,
			       "imds token request: http %ld", st);
		goto out_free;
	}
	memcpy(c->token, b.p, b.len + 1);
	/* renew a minute early */
	c->token_until_us = px_now_mono_us() +
		(uint64_t)(IMDS_TOKEN_TTL_S - 60) * PX_USEC_PER_SEC;
	c->token_fetches++;
out_free:
	if (b.p)
		explicit_bzero(b.p, b.len);
	free(b.p);
	return rc;
}

enum px_err imds_get(struct imds_client *c, const char *path, char **ret,
		     size_t *ret_len, struct px_error *err)
{
	struct buf b = { 0 };
	enum px_err rc;
	long st = 0;

	for (int tries = 0; tries < 2; tries++) {
		if (!c->token[0] || px_now_mono_us() >= c->token_until_us) {
			rc = fetch_token(c, err);
			if (rc != PX_OK)
				return rc;
		}
		free(b.p);
		memset(&b, 0, sizeof b);
		rc = request(c, path, false, &st, &b, err);
		if (rc != PX_OK)
			goto out_free;
		if (st != 401)
			break;
		c->token[0] = '\0'; /* expired or revoked: once more */
	}
	if (st == 404) {
		rc = px_errorf(err, PX_ENOENT, "imds '%s': not found", path);
		goto out_free;
	}
	if (st != 200) {
		rc = px_errorf(err, PX_EHTTP, "imds '%s': http %ld", path, st);
		goto out_free;
	}
	if (!b.p) {
		b.p = strdup("");
		if (!b.p)
			return px_errorf(err, PX_ENOMEM, "imds body");
	}
	*ret = b.p;
	if (ret_len)
		*ret_len = b.len;
	return PX_OK;
out_free:
	free(b.p);
	return rc;
}

/* GET path and parse it as a JSON object. */
static enum px_err get_json(struct imds_client *c, const char *path,
			    json_t **ret, struct px_error *err)
{
	char *body = NULL;
	size_t len = 0;
	json_error_t je;
	json_t *j;
	enum px_err rc;

	rc = imds_get(c, path, &body, &len, err);
	if (rc != PX_OK)
		return rc;
	j = json_loadb(body, len, 0, &je);
	explicit_bzero(body, len);
	free(body);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return px_errorf(err, PX_EPROTO, "imds '%s': not a json "
				 "object (line %d: %s)", path, je.line,
				 je.text);
	}
	*ret = j;
	return PX_OK;
}

static enum px_err json_str(json_t *j, const char *path, const char *key,
			    char *buf, size_t len, struct px_error *err)
{
	json_t *v = json_object_get(j, key);
	const char *s;

	if (!json_is_string(v))
		return px_errorf(err, PX_EPROTO, "imds '%s': field '%s' "
				 "missing or not a string", path, key);
	s = json_string_value(v);
	if (strlen(s) >= len)
		return px_errorf(err, PX_ETOOBIG, "imds '%s': field '%s' too "
				 "long", path, key);
	memcpy(buf, s, strlen(s) + 1);
	return PX_OK;
}

static enum px_err json_time(json_t *j, const char *path, const char *key,
			     int64_t *ret, struct px_error *err)
{
	char b[64];
	enum px_err rc = json_str(j, path, key, b, sizeof b, err);

	if (rc != PX_OK)
		return rc;
	if (px_parse_time(b, strlen(b), ret) != PX_OK)
		return px_errorf(err, PX_EPROTO, "imds '%s': field '%s': bad "
				 "time '%s'", path, key, b);
	return PX_OK;
}

#define P_ACTION "/latest/meta-data/spot/instance-action"
#define P_REBAL "/latest/meta-data/events/recommendations/rebalance"
#define P_IDENT "/latest/dynamic/instance-identity/document"
#define P_ROLE "/latest/meta-data/iam/security-credentials/"

enum px_err imds_spot_action(struct imds_client *c,
			     struct imds_spot_action *ret, bool *ret_present,
			     struct px_error *err)
{
	struct imds_spot_action a;
	json_t *j;
	enum px_err rc;

	rc = get_json(c, P_ACTION, &j, err);
	if (rc == PX_ENOENT) {
		*ret_present = false;
		return PX_OK;
	}
	if (rc != PX_OK)
		return rc;
	memset(&a, 0, sizeof a);
	rc = json_str(j, P_ACTION, "action", a.action, sizeof a.action, err);
	if (rc == PX_OK)
		rc = json_time(j, P_ACTION, "time", &a.time_s, err);
	json_decref(j);
	if (rc != PX_OK)
		return rc;
	*ret = a;
	*ret_present = true;
	return PX_OK;
}

enum px_err imds_rebalance(struct imds_client *c, int64_t *ret_notice_s,
			   bool *ret_present, struct px_error *err)
{
	json_t *j;
	int64_t t;
	enum px_err rc;

	rc = get_json(c, P_REBAL, &j, err);
	if (rc == PX_ENOENT) {
		*ret_present = false;
		return PX_OK;
	}
	if (rc != PX_OK)
		return rc;
	rc = json_time(j, P_REBAL, "noticeTime", &t, err);
	json_decref(j);
	if (rc != PX_OK)
		return rc;
	*ret_notice_s = t;
	*ret_present = true;
	return PX_OK;
}

enum px_err imds_identity(struct imds_client *c, struct imds_identity *ret,
			  struct px_error *err)
{
	struct imds_identity id;
	json_t *j;
	enum px_err rc;

	rc = get_json(c, P_IDENT, &j, err);
	if (rc != PX_OK)
		return rc;
	memset(&id, 0, sizeof id);
	rc = json_str(j, P_IDENT, "instanceId", id.instance_id,
		      sizeof id.instance_id, err);
	if (rc == PX_OK)
		rc = json_str(j, P_IDENT, "instanceType", id.instance_type,
			      sizeof id.instance_type, err);
	if (rc == PX_OK)
		rc = json_str(j, P_IDENT, "availabilityZone", id.zone,
			      sizeof id.zone, err);
	if (rc == PX_OK)
		rc = json_str(j, P_IDENT, "region", id.region,
			      sizeof id.region, err);
	if (rc == PX_OK)
		rc = json_str(j, P_IDENT, "accountId", id.account_id,
			      sizeof id.account_id, err);
	json_decref(j);
	if (rc == PX_OK)
		*ret = id;
	return rc;
}

enum px_err imds_role_credentials(struct imds_client *c, struct awscred *ret,
				  struct px_error *err)
{
	char *role = NULL, path[512];
	struct awscred cr;
	json_t *j = NULL;
	char code[32];
	size_t n;
	enum px_err rc;

	rc = imds_get(c, P_ROLE, &role, &n, err);
	if (rc != PX_OK)
		return rc;
	role[strcspn(role, "\r\n")] = '\0';
	if (!role[0] || strchr(role, '/') ||
	    (size_t)snprintf(path, sizeof path, "%s%s", P_ROLE, role) >=
	    sizeof path) {
		rc = px_errorf(err, PX_EPROTO, "imds: bad role name");
		goto out_free;
	}
	rc = get_json(c, path, &j, err);
	if (rc != PX_OK)
		goto out_free;
	memset(&cr, 0, sizeof cr);
	rc = json_str(j, path, "Code", code, sizeof code, err);
	if (rc == PX_OK && strcmp(code, "Success") != 0)
		rc = px_errorf(err, PX_EAWS, "imds '%s': Code '%s'", path,
			       code);
	if (rc == PX_OK)
		rc = json_str(j, path, "AccessKeyId", cr.access_key_id,
			      sizeof cr.access_key_id, err);
	if (rc == PX_OK)
		rc = json_str(j, path, "SecretAccessKey",
			      cr.secret_access_key,
			      sizeof cr.secret_access_key, err);
	if (rc == PX_OK)
		rc = json_str(j, path, "Token", cr.session_token,
			      sizeof cr.session_token, err);
	if (rc == PX_OK)
		rc = json_time(j, path, "Expiration", &cr.expiration_s, err);
	if (rc == PX_OK) {
		cr.source = AWSCRED_IMDS;
		*ret = cr;
	}
	awscred_clear(&cr);
out_free:
	json_decref(j); /* jansson strings are not wiped: a known limit */
	free(role);
	return rc;
}
