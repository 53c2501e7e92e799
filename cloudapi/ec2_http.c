/* ec2_http.c -- the EC2 client's transport: libcurl multi handle, SigV4 by
 * libcurl (CURLOPT_AWS_SIGV4), one state machine per call (attempt ->
 * response -> retry timer -> attempt ... -> done), event-loop hooks and the
 * blocking driver.  Retries wait on timers kept here, never in sleep().
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <libxml/parser.h>

#include "curl_poll.h"
#include "ec2_int.h"

struct ec2_call {
	struct ec2_client *c;
	struct ec2_call *prev, *next;
	CURL *easy;
	struct curl_slist *hdrs;
	char *body;
	bool retry_not_found;
	ec2_done_fn done;
	void *ctx;
	char *resp;
	size_t resp_len, resp_cap;
	bool too_big;
	int attempts;
	int retry_cost;   /* quota tokens taken by the last retry */
	uint64_t due_us;  /* retry timer (monotonic); 0 when not waiting */
	bool in_multi;
	char action[64];
};

struct ec2_client {
	CURLM *multi;
	char *endpoint;
	char sigv4[160];
	struct awscred_provider *creds;
	struct ec2_config cfg;
	uint64_t rng;
	struct ec2_quota quota;
	struct ec2_call *calls;
	size_t n_calls;
	uint64_t curl_due_us; /* curl's timer (monotonic), 0 when none */
	long last_timer_ms;
	int max_results;      /* Describe* page size */
	int pages_max;        /* pages one Describe* operation follows */
	/* Hook mode: the sockets the loop was told to watch and not yet to
	 * remove, so that freeing the client removes them all even where
	 * curl closes a cached connection without telling. */
	curl_socket_t *socks;
	size_t n_socks, cap_socks;
};

/* ------------------------------------------------------------ params */

static void params_grow(struct ec2_params *p)
{
	char **kv;
	size_t cap;

	if (p->n < p->cap)
		return;
	cap = p->cap ? p->cap * 2 : 16;
	kv = px_reallocarray(p->kv, cap, 2 * sizeof *kv);
	if (!kv) {
		p->oom = PX_ENOMEM;
		return;
	}
	p->kv = kv;
	p->cap = cap;
}

void ec2_params_add(struct ec2_params *p, const char *name,
		    const char *value)
{
	char *k, *v;

	if (p->oom)
		return;
	params_grow(p);
	if (p->oom)
		return;
	k = strdup(name);
	v = strdup(value ? value : "");
	if (!k || !v) {
		free(k);
		free(v);
		p->oom = PX_ENOMEM;
		return;
	}
	p->kv[2 * p->n] = k;
	p->kv[2 * p->n + 1] = v;
	p->n++;
}

void ec2_params_addf(struct ec2_params *p, const char *value,
		     const char *name_fmt, ...)
{
	char name[256];
	va_list ap;
	int n;

	va_start(ap, name_fmt);
	n = vsnprintf(name, sizeof name, name_fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof name) {
		p->oom = PX_EINVAL;
		return;
	}
	ec2_params_add(p, name, value);
}

void ec2_params_init(struct ec2_params *p, const char *action)
{
	memset(p, 0, sizeof *p);
	ec2_params_add(p, "Action", action);
	ec2_params_add(p, "Version", EC2_API_VERSION);
}

void ec2_params_release(struct ec2_params *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < 2 * p->n; i++)
		free(p->kv[i]);
	free(p->kv);
	memset(p, 0, sizeof *p);
}

enum px_err ec2_params_copy(struct ec2_params *dst,
			    const struct ec2_params *src, const char *token,
			    struct px_error *err)
{
	memset(dst, 0, sizeof *dst);
	for (size_t i = 0; i < src->n; i++)
		ec2_params_add(dst, src->kv[2 * i], src->kv[2 * i + 1]);
	if (token && *token)
		ec2_params_add(dst, "NextToken", token);
	dst->retry_not_found = src->retry_not_found;
	if (src->oom || dst->oom) {
		enum px_err rc = src->oom ? src->oom : dst->oom;

		ec2_params_release(dst);
		return px_errorf(err, rc, "request parameters");
	}
	return PX_OK;
}

enum px_err ec2_params_encode(const struct ec2_params *p, char **ret,
			      struct px_error *err)
{
	char *out = NULL, *nout;
	size_t len = 0, cap = 0;
	enum px_err rc = PX_OK;
	CURL *h;

	if (p->oom)
		return px_errorf(err, p->oom, "building request parameters");
	h = curl_easy_init();
	if (!h)
		return px_errorf(err, PX_ENOMEM, "curl_easy_init");
	for (size_t i = 0; i < 2 * p->n; i++) {
		char *e = curl_easy_escape(h, p->kv[i], 0);
		size_t el;

		if (!e) {
			rc = px_errorf(err, PX_ENOMEM, "escaping parameter");
			goto out_free;
		}
		el = strlen(e);
		if (len + el + 2 > cap) {
			cap = (len + el + 2) * 2;
			nout = realloc(out, cap);
			if (!nout) {
				curl_free(e);
				rc = px_errorf(err, PX_ENOMEM, "request body");
				goto out_free;
			}
			out = nout;
		}
		if (i > 0)
			out[len++] = (i % 2) ? '=' : '&';
		memcpy(out + len, e, el);
		len += el;
		out[len] = '\0';
		curl_free(e);
	}
	*ret = out;
	out = NULL;
out_free:
	free(out);
	curl_easy_cleanup(h);
	return rc;
}

/* ------------------------------------------------------------ responses */

void ec2_response_release(struct ec2_response *r)
{
	if (!r)
		return;
	xmlFreeDoc(r->doc);
	memset(r, 0, sizeof *r);
}

void ec2_response_aws(const struct ec2_response *r,
		      struct ec2_aws_error *ret)
{
	memset(ret, 0, sizeof *ret);
	ret->http_status = r->http_status;
	ret->attempts = r->attempts;
	snprintf(ret->request_id, sizeof ret->request_id, "%s",
		 r->request_id);
}

/* ------------------------------------------------------------ timers */

static uint64_t next_due_us(const struct ec2_client *c)
{
	uint64_t due = c->curl_due_us;

	for (const struct ec2_call *k = c->calls; k; k = k->next)
		if (k->due_us && (!due || k->due_us < due))
			due = k->due_us;
	return due;
}

/* Tell the loop (hook mode) when to call ec2_client_on_timeout. */
static void update_timer(struct ec2_client *c)
{
	uint64_t due, now;
	long ms;

	if (!c->cfg.timer_fn)
		return;
	due = next_due_us(c);
	if (!due) {
		ms = -1;
	} else {
		now = px_now_mono_us();
		ms = due <= now ? 0 : (long)((due - now + 999) / 1000);
	}
	c->last_timer_ms = ms;
	c->cfg.timer_fn(ms, c->cfg.hook_ctx);
}

static int curl_timer_cb(CURLM *m, long timeout_ms, void *ud)
{
	struct ec2_client *c = ud;

	(void)m;
	c->curl_due_us = timeout_ms < 0 ? 0 :
		px_now_mono_us() + (uint64_t)timeout_ms * 1000 + 1;
	update_timer(c);
	return 0;
}

/* Remember (watch) or forget a socket the loop was told about. */
static void sock_track(struct ec2_client *c, curl_socket_t s, bool watch)
{
	size_t i;

	for (i = 0; i < c->n_socks && c->socks[i] != s; i++)
		;
	if (!watch) {
		if (i < c->n_socks)
			c->socks[i] = c->socks[--c->n_socks];
		return;
	}
	if (i < c->n_socks)
		return;
	if (c->n_socks == c->cap_socks) {
		size_t cap = c->cap_socks ? 2 * c->cap_socks : 8;
		curl_socket_t *v = px_reallocarray(c->socks, cap, sizeof *v);

		if (!v)
			return; /* only the sweep at free misses it */
		c->socks = v;
		c->cap_socks = cap;
	}
	c->socks[c->n_socks++] = s;
}

static int curl_socket_cb(CURL *e, curl_socket_t s, int what, void *ud,
			  void *sp)
{
	struct ec2_client *c = ud;

	(void)e;
	(void)sp;
	sock_track(c, s, what != CURL_POLL_REMOVE);
	c->cfg.socket_fn((int)s, ec2_poll_from_curl(what), c->cfg.hook_ctx);
	return 0;
}

/* ------------------------------------------------------------ calls */

static size_t write_cb(char *p, size_t sz, size_t nm, void *ud)
{
	struct ec2_call *k = ud;
	size_t n = sz * nm;
	char *r;

	if (n > k->c->cfg.response_max - k->resp_len) {
		k->too_big = true;
		return 0;
	}
	if (k->resp_len + n + 1 > k->resp_cap) {
		size_t cap = (k->resp_len + n + 1) * 2;

		if (cap > k->c->cfg.response_max + 1)
			cap = k->c->cfg.response_max + 1;
		r = realloc(k->resp, cap);
		if (!r)
			return 0;
		k->resp = r;
		k->resp_cap = cap;
	}
	memcpy(k->resp + k->resp_len, p, n);
	k->resp_len += n;
	k->resp[k->resp_len] = '\0';
	return n;
}

/* Redact secrets from a trace chunk, then hand it to the debug hook. */
static int debug_cb(CURL *h, curl_infotype t, char *data, size_t size,
		    void *ud)
{
	static const char *const secret_hdrs[] = {
		"authorization:", "x-amz-security-token:",
	};
	struct ec2_call *k = ud;
	const char *p = data, *end = data + size;

	(void)h;
	if (t != CURLINFO_TEXT && t != CURLINFO_HEADER_IN &&
	    t != CURLINFO_HEADER_OUT)
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p + 1) : (size_t)(end - p);
		bool red = false;

		for (size_t i = 0; i < 2; i++) {
			size_t hl = strlen(secret_hdrs[i]);

			if (ll >= hl && strncasecmp(p, secret_hdrs[i], hl) == 0) {
				k->c->cfg.debug_fn(p, hl, k->c->cfg.debug_ctx);
				k->c->cfg.debug_fn(" [redacted]\n", 12,
						   k->c->cfg.debug_ctx);
				red = true;
			}
		}
		if (!red)
			k->c->cfg.debug_fn(p, ll, k->c->cfg.debug_ctx);
		p += ll;
	}
	return 0;
}

static void call_free(struct ec2_call *k)
{
	if (!k)
		return;
	if (k->easy) {
		if (k->in_multi)
			curl_multi_remove_handle(k->c->multi, k->easy);
		curl_easy_cleanup(k->easy);
	}
	curl_slist_free_all(k->hdrs);
	free(k->body);
	free(k->resp);
	free(k);
}

static void call_unlink(struct ec2_call *k)
{
	struct ec2_client *c = k->c;

	if (k->prev)
		k->prev->next = k->next;
	else
		c->calls = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->prev = k->next = NULL;
	c->n_calls--;
}

/* One attempt: fresh credentials (they may have been refreshed) and a
 * fresh signature date, then into the multi handle. */
static enum px_err call_attempt(struct ec2_call *k, struct px_error *err)
{
	struct ec2_client *c = k->c;
	struct curl_slist *h;
	enum px_err rc;

	h = curl_slist_append(NULL, "Content-Type: application/x-www-form-"
			      "urlencoded; charset=utf-8");
	if (!h)
		return px_errorf(err, PX_ENOMEM, "request headers");
	rc = awscred_curl_sign(c->creds, k->easy, &h, err);
	if (rc != PX_OK) {
		curl_slist_free_all(h);
		return rc;
	}
	curl_slist_free_all(k->hdrs);
	k->hdrs = h;
	curl_easy_setopt(k->easy, CURLOPT_HTTPHEADER, k->hdrs);
	k->resp_len = 0;
	k->too_big = false;
	k->due_us = 0;
	k->attempts++;
	if (curl_multi_add_handle(c->multi, k->easy) != CURLM_OK)
		return px_errorf(err, PX_EHTTP, "curl_multi_add_handle failed");
	k->in_multi = true;
	return PX_OK;
}

static void call_finish(struct ec2_call *k, enum px_err rc,
			struct ec2_response *resp, struct px_error *err,
			struct ec2_aws_error *aws)
{
	call_unlink(k);
	if (k->done)
		k->done(rc, resp, err, aws, k->ctx);
	call_free(k);
}

static void explain(struct ec2_call *k, struct px_error *err,
		    const struct ec2_aws_error *aws)
{
	if (!aws->code[0])
		return;
	px_errorf(err, PX_EAWS, "%s: aws error '%s' (http %ld, request id "
		  "'%s', %d attempt%s): %s%s", k->action, aws->code,
		  aws->http_status, aws->request_id, aws->attempts,
		  aws->attempts == 1 ? "" : "s", aws->message,
		  strcmp(aws->code, "RequestExpired") == 0 ?
		  "; this host's clock differs from AWS's by more than 15 "
		  "minutes: fix the clock (NTP, timedatectl) and retry" : "");
}

/* A finished transfer: success, final failure, or a retry timer. */
/* ---- what this process sent, for proteusd's /metrics ---- */

static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ec2_api_stat stats[EC2_STATS_MAX];
static size_t n_stats;

/* One attempt of action ended (answered, or failed in transport);
 * throttled: AWS said slow down.  Actions past EC2_STATS_MAX are not
 * counted (there are fewer than that: ec2_ops.c). */
static void stats_count(const char *action, bool throttled)
{
	size_t i;

	pthread_mutex_lock(&stats_mu);
	for (i = 0; i < n_stats && strcmp(stats[i].action, action); i++)
		;
	if (i == n_stats && n_stats < EC2_STATS_MAX)
		snprintf(stats[n_stats++].action, sizeof stats[i].action,
			 "%s", action);
	if (i < n_stats) {
		stats[i].calls++;
		stats[i].throttled += throttled;
	}
	pthread_mutex_unlock(&stats_mu);
}

size_t ec2_api_stats(struct ec2_api_stat *ret, size_t max)
{
	size_t n;

	pthread_mutex_lock(&stats_mu);
	n = n_stats < max ? n_stats : max;
	memcpy(ret, stats, n * sizeof *ret);
	pthread_mutex_unlock(&stats_mu);
	return n;
}

static void call_done(struct ec2_call *k, CURLcode cc)
{
	struct ec2_client *c = k->c;
	struct ec2_aws_error aws;
	struct ec2_response resp;
	struct px_error err;
	enum px_err rc;
	long status = 0;
	bool timeout = false;
	int cost;

	memset(&aws, 0, sizeof aws);
	memset(&resp, 0, sizeof resp);
	px_error_clear(&err);
	curl_multi_remove_handle(c->multi, k->easy);
	k->in_multi = false;
	aws.attempts = k->attempts;
	if (cc != CURLE_OK) {
		stats_count(k->action, false);
		if (k->too_big) {
			rc = px_errorf(&err, PX_ETOOBIG, "%s: response over "
				       "%zu bytes", k->action,
				       c->cfg.response_max);
			goto out_final;
		}
		timeout = cc == CURLE_OPERATION_TIMEDOUT;
		rc = px_errorf(&err, PX_EHTTP, "%s: %s (%s)", k->action,
			       curl_easy_strerror(cc), c->endpoint);
	} else {
		curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &status);
		aws.http_status = status;
		rc = ec2_xml_parse(k->resp ? k->resp : "", k->resp_len, status,
				   &resp.doc, &aws, &err);
		stats_count(k->action, rc == PX_EAWS &&
			    ec2_retry_is_throttle(aws.code));
		if (rc == PX_OK) {
			if (k->retry_cost || k->attempts == 1)
				ec2_quota_success(&c->quota, k->retry_cost);
			resp.http_status = status;
			resp.root = xmlDocGetRootElement(resp.doc);
			resp.attempts = k->attempts;
			(void)ec2_xml_text(resp.root, "requestId",
					   resp.request_id,
					   sizeof resp.request_id, NULL);
			call_finish(k, PX_OK, &resp, NULL, NULL);
			ec2_response_release(&resp);
			return;
		}
		if (rc == PX_EPROTO)
			goto out_final; /* a 200 we cannot read: not retried */
		if (rc != PX_EAWS)
			px_error_prefix(&err, "%s: ", k->action);
	}
	if (k->attempts < c->cfg.max_attempts &&
	    ec2_retry_is_retryable(status, aws.code, k->retry_not_found)) {
		cost = 0;
		if (c->cfg.no_retry_quota ||
		    ec2_quota_acquire(&c->quota, timeout, &cost)) {
			k->retry_cost = cost;
			k->due_us = px_now_mono_us() + 1 +
				ec2_retry_delay_us(k->attempts,
						   c->cfg.backoff_base_us,
						   c->cfg.backoff_cap_us,
						   &c->rng);
			return;
		}
	}
out_final:
	explain(k, &err, &aws);
	if (rc == PX_EPROTO)
		px_error_prefix(&err, "%s: ", k->action);
	call_finish(k, rc, NULL, &err, &aws);
}

/* Drain curl's completion queue, then start retries that are due.  Says
 * whether anything completed or started (then curl has new work). */
static bool process(struct ec2_client *c)
{
	CURLMsg *m;
	int left;
	uint64_t now;
	bool again = true, busy = false;

	while ((m = curl_multi_info_read(c->multi, &left))) {
		struct ec2_call *k = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &k);
		call_done(k, m->data.result);
		busy = true;
	}
	while (again) {
		again = false;
		now = px_now_mono_us();
		for (struct ec2_call *k = c->calls; k; k = k->next) {
			struct px_error err;
			enum px_err rc;

			if (!k->due_us || k->due_us > now)
				continue;
			busy = true;
			rc = call_attempt(k, &err);
			if (rc != PX_OK) {
				struct ec2_aws_error aws;

				memset(&aws, 0, sizeof aws);
				aws.attempts = k->attempts;
				call_finish(k, rc, NULL, &err, &aws);
				again = true; /* the list changed */
				break;
			}
		}
	}
	update_timer(c);
	return busy;
}

enum px_err ec2_call_start(struct ec2_client *c, struct ec2_params *params,
			   ec2_done_fn done, void *ctx, struct px_error *err)
{
	struct ec2_call *k;
	enum px_err rc;

	k = px_calloc(1, sizeof *k);
	if (!k) {
		ec2_params_release(params);
		return px_errorf(err, PX_ENOMEM, "ec2 call");
	}
	k->c = c;
	k->done = done;
	k->ctx = ctx;
	k->retry_not_found = params->retry_not_found;
	snprintf(k->action, sizeof k->action, "%s",
		 params->n ? params->kv[1] : "?");
	rc = ec2_params_encode(params, &k->body, err);
	ec2_params_release(params);
	if (rc != PX_OK)
		goto out_free;
	k->easy = curl_easy_init();
	if (!k->easy) {
		rc = px_errorf(err, PX_ENOMEM, "curl_easy_init");
		goto out_free;
	}
	curl_easy_setopt(k->easy, CURLOPT_URL, c->endpoint);
	curl_easy_setopt(k->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(k->easy, CURLOPT_POSTFIELDS, k->body);
	curl_easy_setopt(k->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(k->body));
	curl_easy_setopt(k->easy, CURLOPT_AWS_SIGV4, c->sigv4);
	curl_easy_setopt(k->easy, CURLOPT_USERAGENT, "proteus/" PX_VERSION);
	curl_easy_setopt(k->easy, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(k->easy, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(k->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(k->easy, CURLOPT_TIMEOUT_MS,
			 (long)(c->cfg.timeout_us / 1000));
	curl_easy_setopt(k->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(c->cfg.connect_timeout_us / 1000));
	curl_easy_setopt(k->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(k->easy, CURLOPT_WRITEDATA, k);
	curl_easy_setopt(k->easy, CURLOPT_PRIVATE, k);
	if (c->cfg.debug_fn) {
		curl_easy_setopt(k->easy, CURLOPT_DEBUGFUNCTION, debug_cb);
		curl_easy_setopt(k->easy, CURLOPT_DEBUGDATA, k);
		curl_easy_setopt(k->easy, CURLOPT_VERBOSE, 1L);
	}
	k->next = c->calls;
	if (c->calls)
		c->calls->prev = k;
	c->calls = k;
	c->n_calls++;
	rc = call_attempt(k, err);
	if (rc != PX_OK) {
		call_unlink(k);
		goto out_free;
	}
	return PX_OK;
out_free:
	call_free(k);
	return rc;
}

/* ------------------------------------------------------------ client */

enum px_err ec2_client_new(const struct ec2_config *cfg,
			   struct ec2_client **ret, struct px_error *err)
{
	struct ec2_client *c;
	const char *ep = cfg->endpoint;
	enum px_err rc;
	size_t n;

	if (!cfg->region || !*cfg->region || strlen(cfg->region) > 64 ||
	    strpbrk(cfg->region, ":/ "))
		return px_errorf(err, PX_EINVAL, "bad or missing region '%s'",
				 cfg->region ? cfg->region : "");
	if (!cfg->creds)
		return px_errorf(err, PX_EINVAL, "no credentials provider");
	if (!cfg->socket_fn != !cfg->timer_fn)
		return px_errorf(err, PX_EINVAL,
				 "socket_fn and timer_fn go together");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return px_errorf(err, PX_EHTTP, "curl_global_init failed");
	xmlInitParser();
	c = px_calloc(1, sizeof *c);
	if (!c)
		return px_errorf(err, PX_ENOMEM, "ec2 client");
	c->cfg = *cfg;
	c->cfg.endpoint = NULL;
	if (!c->cfg.max_attempts)
		c->cfg.max_attempts = 3;
	if (!c->cfg.backoff_base_us)
		c->cfg.backoff_base_us = PX_USEC_PER_SEC;
	if (!c->cfg.backoff_cap_us)
		c->cfg.backoff_cap_us = 20 * PX_USEC_PER_SEC;
	if (!c->cfg.timeout_us)
		c->cfg.timeout_us = 30 * PX_USEC_PER_SEC;
	if (!c->cfg.connect_timeout_us)
		c->cfg.connect_timeout_us = 10 * PX_USEC_PER_SEC;
	if (!c->cfg.response_max)
		c->cfg.response_max = EC2_RESPONSE_MAX;
	c->rng = cfg->seed ? cfg->seed : px_now_mono_us() ^
		(uint64_t)px_now_wall_us();
	c->creds = cfg->creds;
	c->max_results = 1000;
	c->pages_max = EC2_PAGES_MAX;
	ec2_quota_init(&c->quota);
	if (!ep || !*ep)
		ep = getenv("AWS_ENDPOINT_URL_EC2");
	if (!ep || !*ep)
		ep = getenv("AWS_ENDPOINT_URL");
	if (ep && *ep) {
		if (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) {
			rc = px_errorf(err, PX_EINVAL, "endpoint '%s': not an "
				       "http(s) url", ep);
			goto out_free;
		}
		c->endpoint = strdup(ep);
	} else {
		n = strlen(cfg->region) + 40;
		c->endpoint = malloc(n);
		if (c->endpoint)
			snprintf(c->endpoint, n,
				 "https://ec2.%s.amazonaws.com/", cfg->region);
	}
	if (!c->endpoint) {
		rc = px_errorf(err, PX_ENOMEM, "ec2 endpoint");
		goto out_free;
	}
	snprintf(c->sigv4, sizeof c->sigv4, "aws:amz:%s:ec2", cfg->region);
	c->multi = curl_multi_init();
	if (!c->multi) {
		rc = px_errorf(err, PX_ENOMEM, "curl_multi_init");
		goto out_free;
	}
	if (cfg->socket_fn) {
		curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION,
				  curl_socket_cb);
		curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
		curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION,
				  curl_timer_cb);
		curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	}
	*ret = c;
	return PX_OK;
out_free:
	ec2_client_free(c);
	return rc;
}

void ec2_client_free(struct ec2_client *c)
{
	struct px_error err;
	struct ec2_aws_error aws;

	if (!c)
		return;
	memset(&aws, 0, sizeof aws);
	while (c->calls) {
		struct ec2_call *k = c->calls;

		px_errorf(&err, PX_ECANCELED, "%s: client closed", k->action);
		aws.attempts = k->attempts;
		call_finish(k, PX_ECANCELED, NULL, &err, &aws);
	}
	if (c->multi)
		curl_multi_cleanup(c->multi);
	/* The loop must not call back into a freed client: whatever it still
	 * watches for us goes (the fd may be closed by now: the hook must
	 * only forget it), and so does the timer. */
	if (c->cfg.socket_fn) {
		while (c->n_socks)
			c->cfg.socket_fn((int)c->socks[--c->n_socks],
					 EC2_POLL_REMOVE, c->cfg.hook_ctx);
		c->cfg.timer_fn(-1, c->cfg.hook_ctx);
	}
	free(c->socks);
	free(c->endpoint);
	free(c);
}

const char *ec2_client_endpoint(const struct ec2_client *c)
{
	return c->endpoint;
}

bool ec2_client_hooked(const struct ec2_client *c)
{
	return c->cfg.socket_fn != NULL;
}

size_t ec2_client_pending(const struct ec2_client *c)
{
	return c->n_calls;
}

void ec2_client_set_paging(struct ec2_client *c, int max_results,
			   int pages_max)
{
	c->max_results = max_results;
	c->pages_max = pages_max;
}

void ec2_client_paging(const struct ec2_client *c, int *ret_max_results,
		       int *ret_pages_max)
{
	*ret_max_results = c->max_results;
	*ret_pages_max = c->pages_max;
}

enum px_err ec2_client_on_socket(struct ec2_client *c, int fd, int what)
{
	int running;

	if (curl_multi_socket_action(c->multi, fd, ec2_poll_to_cselect(what),
				     &running) != CURLM_OK)
		return PX_EHTTP;
	process(c);
	return PX_OK;
}

enum px_err ec2_client_on_timeout(struct ec2_client *c)
{
	int running;

	if (c->curl_due_us && c->curl_due_us <= px_now_mono_us() + 1000) {
		c->curl_due_us = 0;
		if (curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0,
					     &running) != CURLM_OK)
			return PX_EHTTP;
	}
	process(c);
	return PX_OK;
}

enum px_err ec2_client_step(struct ec2_client *c, int timeout_ms)
{
	uint64_t due = next_due_us(c), now = px_now_mono_us();
	int running;

	if (c->cfg.socket_fn)
		return PX_EINVAL;
	if (due) {
		uint64_t wait = due > now ? (due - now + 999) / 1000 : 0;

		if ((uint64_t)timeout_ms > wait)
			timeout_ms = (int)wait;
	}
	if (curl_multi_poll(c->multi, NULL, 0, timeout_ms, NULL) != CURLM_OK)
		return PX_EHTTP;
	/* Until nothing completes: a callback may start calls (or a retry
	 * may be due) that curl must begin now, and a transfer that finishes
	 * in that perform must be seen now, not after the next poll's whole
	 * timeout (nothing would wake it: the socket has gone quiet). */
	do {
		if (curl_multi_perform(c->multi, &running) != CURLM_OK)
			return PX_EHTTP;
	} while (process(c));
	return PX_OK;
}

/* ------------------------------------------------------------ blocking */

enum px_err ec2_check_blocking(const struct ec2_client *c,
			       struct px_error *err)
{
	if (c->cfg.socket_fn)
		return px_errorf(err, PX_EINVAL, "blocking ec2 call on a "
				 "client driven by an event loop");
	return PX_OK;
}

bool ec2_sync_done(struct ec2_sync *s, enum px_err rc,
		   const struct px_error *err,
		   const struct ec2_aws_error *aws)
{
	if (s->abandoned) {
		free(s);
		return false;
	}
	s->done = true;
	s->rc = rc;
	if (err)
		s->err = *err;
	if (aws)
		s->aws = *aws;
	return true;
}

enum px_err ec2_sync_wait(struct ec2_client *c, struct ec2_sync *s,
			  struct px_error *err,
			  struct ec2_aws_error *ret_aws)
{
	enum px_err rc;

	while (!s->done) {
		rc = ec2_client_step(c, 1000);
		if (rc != PX_OK) {
			s->abandoned = true;
			return px_errorf(err, rc, "driving the curl multi "
					 "handle failed");
		}
	}
	if (s->rc != PX_OK) {
		if (err)
			*err = s->err;
		if (ret_aws)
			*ret_aws = s->aws;
	}
	return s->rc;
}

struct sync_call {
	struct ec2_sync sync; /* first: ec2_sync_done frees through it */
	struct ec2_response resp;
};

static void sync_done(enum px_err rc, struct ec2_response *resp,
		      const struct px_error *err,
		      const struct ec2_aws_error *aws, void *ctx)
{
	struct sync_call *s = ctx;

	if (!ec2_sync_done(&s->sync, rc, err, aws) || rc != PX_OK)
		return;
	s->resp = *resp;
	resp->doc = NULL; /* taken */
}

enum px_err ec2_call(struct ec2_client *c, struct ec2_params *params,
		     struct ec2_response *ret, struct px_error *err,
		     struct ec2_aws_error *ret_aws)
{
	struct sync_call *s;
	enum px_err rc;

	memset(ret, 0, sizeof *ret);
	rc = ec2_check_blocking(c, err);
	if (rc == PX_OK) {
		s = px_calloc(1, sizeof *s);
		rc = s ? PX_OK : px_errorf(err, PX_ENOMEM, "ec2 call");
	}
	if (rc != PX_OK) {
		ec2_params_release(params);
		return rc;
	}
	rc = ec2_call_start(c, params, sync_done, s, err);
	if (rc != PX_OK) {
		free(s);
		return rc;
	}
	rc = ec2_sync_wait(c, &s->sync, err, ret_aws);
	if (s->sync.abandoned)
		return rc;
	if (rc == PX_OK)
		*ret = s->resp;
	free(s);
	return rc;
}
