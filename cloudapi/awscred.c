/* awscred.c -- the AWS credential chain (environment, shared credentials
 * file, config file, IMDSv2 role) and the region lookup.  Secrets stay in
 * struct awscred, are wiped when released, and never reach an error text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "awscred.h"
#include "imds.h"

struct awscred_provider {
	struct awscred cur;
	struct imds_client *imds;   /* IMDS source only */
	char warning[4096 + 128];
};

void awscred_clear(struct awscred *c)
{
	if (c)
		explicit_bzero(c, sizeof *c);
}

const char *awscred_source_name(enum awscred_source s)
{
	static const char *const names[] = {
		[AWSCRED_NONE] = "none", [AWSCRED_STATIC] = "static",
		[AWSCRED_ENV] = "environment",
		[AWSCRED_FILE] = "shared credentials file",
		[AWSCRED_CONFIG] = "config file",
		[AWSCRED_IMDS] = "instance metadata (IMDSv2)",
	};

	return s < AWSCRED_SOURCE_MAX ? names[s] : "?";
}

static enum px_err copy_field(char *dst, size_t len, const char *src,
			      const char *what, struct px_error *err)
{
	size_t n = strlen(src);

	if (n >= len)
		return px_errorf(err, PX_ETOOBIG, "%s: %zu bytes, over %zu",
				 what, n, len - 1);
	memcpy(dst, src, n + 1);
	return PX_OK;
}

enum px_err awscred_from_env(struct awscred *ret, struct px_error *err)
{
	const char *id = getenv("AWS_ACCESS_KEY_ID");
	const char *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *tok = getenv("AWS_SESSION_TOKEN");
	struct awscred c;
	enum px_err rc;

	if (!id || !*id || !sk || !*sk)
		return px_errorf(err, PX_ENOENT, "AWS_ACCESS_KEY_ID and "
				 "AWS_SECRET_ACCESS_KEY are not both set");
	if (!tok || !*tok)
		tok = getenv("AWS_SECURITY_TOKEN");
	memset(&c, 0, sizeof c);
	rc = copy_field(c.access_key_id, sizeof c.access_key_id, id,
			"AWS_ACCESS_KEY_ID", err);
	if (rc == PX_OK)
		rc = copy_field(c.secret_access_key,
				sizeof c.secret_access_key, sk,
				"AWS_SECRET_ACCESS_KEY", err);
	if (rc == PX_OK && tok && *tok)
		rc = copy_field(c.session_token, sizeof c.session_token, tok,
				"AWS_SESSION_TOKEN", err);
	if (rc == PX_OK) {
		c.source = AWSCRED_ENV;
		*ret = c;
	}
	awscred_clear(&c);
	return rc;
}

/* Read a whole small file; *ret is NUL-terminated, caller frees. */
static enum px_err read_file(const char *path, char **ret, bool *insecure,
			     struct px_error *err)
{
	struct stat st;
	size_t len;
	enum px_err rc;

	rc = px_read_file(path, AWSCRED_FILE_MAX, ret, &len, err);
	/* advisory only: the warning names a file others can read */
	if (rc == PX_OK && insecure)
		*insecure = stat(path, &st) == 0 && (st.st_mode & 077) != 0;
	return rc;
}

static bool is_sp(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* Find key in section sect of an INI text.  Returns a malloc'd, trimmed
 * copy of the value (caller wipes and frees), or NULL. */
static char *ini_get(const char *text, const char *sect, const char *key)
{
	const char *p = text;
	bool in = false;
	size_t sl = strlen(sect), kl = strlen(key);

	while (*p) {
		const char *e = p + strcspn(p, "\n"), *a = p, *b = e;

		p = *e ? e + 1 : e;
		while (a < b && is_sp(*a))
			a++;
		while (b > a && is_sp(b[-1]))
			b--;
		if (a == b || *a == '#' || *a == ';')
			continue;
		if (*a == '[') {
			const char *c = memchr(a, ']', (size_t)(b - a));
			const char *s0 = a + 1, *s1 = c ? c : b;

			while (s0 < s1 && is_sp(*s0))
				s0++;
			while (s1 > s0 && is_sp(s1[-1]))
				s1--;
			in = (size_t)(s1 - s0) == sl &&
			     memcmp(s0, sect, sl) == 0;
			continue;
		}
		if (!in || (size_t)(b - a) <= kl || memcmp(a, key, kl) != 0)
			continue;
		a += kl;
		while (a < b && is_sp(*a))
			a++;
		if (a == b || *a != '=')
			continue;
		a++;
		while (a < b && is_sp(*a))
			a++;
		return px_strndup(a, (size_t)(b - a));
	}
	return NULL;
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

enum px_err awscred_from_file(const char *path, const char *profile,
			      bool config_style, struct awscred *ret,
			      bool *ret_insecure, struct px_error *err)
{
	char sect[160], *text = NULL, *id = NULL, *sk = NULL, *tok = NULL;
	struct awscred c;
	enum px_err rc;

	if (config_style && strcmp(profile, "default") != 0)
		snprintf(sect, sizeof sect, "profile %s", profile);
	else
		snprintf(sect, sizeof sect, "%s", profile);
	rc = read_file(path, &text, ret_insecure, err);
	if (rc != PX_OK)
		return rc;
	id = ini_get(text, sect, "aws_access_key_id");
	sk = ini_get(text, sect, "aws_secret_access_key");
	tok = ini_get(text, sect, "aws_session_token");
	if (!id || !*id || !sk || !*sk) {
		rc = px_errorf(err, PX_ENOENT, "'%s': profile '%s' has no "
			       "aws_access_key_id and aws_secret_access_key",
			       path, profile);
		goto out_free;
	}
	memset(&c, 0, sizeof c);
	rc = copy_field(c.access_key_id, sizeof c.access_key_id, id,
			"aws_access_key_id", err);
	if (rc == PX_OK)
		rc = copy_field(c.secret_access_key,
				sizeof c.secret_access_key, sk,
				"aws_secret_access_key", err);
	if (rc == PX_OK && tok && *tok)
		rc = copy_field(c.session_token, sizeof c.session_token, tok,
				"aws_session_token", err);
	if (rc != PX_OK) {
		px_error_prefix(err, "'%s': profile '%s': ", path, profile);
	} else {
		c.source = config_style ? AWSCRED_CONFIG : AWSCRED_FILE;
		*ret = c;
	}
	awscred_clear(&c);
out_free:
	wipe_free(id);
	wipe_free(sk);
	wipe_free(tok);
	wipe_free(text);
	return rc;
}

static const char *profile_name(const char *given)
{
	const char *p = given;

	if (!p || !*p)
		p = getenv("AWS_PROFILE");
	if (!p || !*p)
		p = getenv("AWS_DEFAULT_PROFILE");
	return p && *p ? p : "default";
}

/* $VAR, else ~/.aws/NAME, into buf. */
static bool aws_path(const char *var, const char *name, char *buf,
		     size_t len)
{
	const char *v = getenv(var), *home;

	if (v && *v)
		return (size_t)snprintf(buf, len, "%s", v) < len;
	home = getenv("HOME");
	if (!home || !*home)
		return false;
	return (size_t)snprintf(buf, len, "%s/.aws/%s", home, name) < len;
}

enum px_err awscred_region(char *buf, size_t len, struct px_error *err)
{
	const char *r = getenv("AWS_REGION");
	char path[4096], sect[160], *text = NULL, *v;
	const char *prof;
	enum px_err rc;

	if (!r || !*r)
		r = getenv("AWS_DEFAULT_REGION");
	if (r && *r)
		return copy_field(buf, len, r, "region", err);
	if (!aws_path("AWS_CONFIG_FILE", "config", path, sizeof path))
		return px_errorf(err, PX_ENOENT, "no region: set AWS_REGION");
	rc = read_file(path, &text, NULL, err);
	if (rc != PX_OK)
		return px_errorf(err, PX_ENOENT, "no region: set AWS_REGION "
				 "or 'region' in '%s'", path);
	prof = profile_name(NULL);
	if (strcmp(prof, "default") != 0)
		snprintf(sect, sizeof sect, "profile %s", prof);
	else
		snprintf(sect, sizeof sect, "default");
	v = ini_get(text, sect, "region");
	if (v && *v)
		rc = copy_field(buf, len, v, "region", err);
	else
		rc = px_errorf(err, PX_ENOENT, "'%s': profile '%s' has no "
			       "region", path, prof);
	free(v);
	wipe_free(text);
	return rc;
}

enum px_err awscred_provider_static(const struct awscred *c,
				    struct awscred_provider **ret,
				    struct px_error *err)
{
	struct awscred_provider *p = px_calloc(1, sizeof *p);

	if (!p)
		return px_errorf(err, PX_ENOMEM, "credentials provider");
	p->cur = *c;
	if (p->cur.source == AWSCRED_NONE)
		p->cur.source = AWSCRED_STATIC;
	*ret = p;
	return PX_OK;
}

enum px_err awscred_provider_new(const struct awscred_opts *opts,
				 struct awscred_provider **ret,
				 struct px_error *err)
{
	struct awscred_opts none = { 0 };
	struct awscred_provider *p;
	struct px_error e2;
	char path[4096];
	const char *prof;
	bool insecure = false;
	enum px_err rc;

	if (!opts)
		opts = &none;
	p = px_calloc(1, sizeof *p);
	if (!p)
		return px_errorf(err, PX_ENOMEM, "credentials provider");
	prof = profile_name(opts->profile);
	/* An explicit profile in code skips the environment (as botocore
	 * does for --profile); AWS_PROFILE does not. */
	if (!(opts->profile && *opts->profile) &&
	    awscred_from_env(&p->cur, &e2) == PX_OK)
		goto out_ok;
	if (aws_path("AWS_SHARED_CREDENTIALS_FILE", "credentials", path,
		     sizeof path)) {
		rc = awscred_from_file(path, prof, false, &p->cur, &insecure,
				       &e2);
		if (rc == PX_OK)
			goto out_insecure;
		if (rc != PX_ENOENT) {
			if (err)
				*err = e2;
			goto out_free;
		}
	}
	if (aws_path("AWS_CONFIG_FILE", "config", path, sizeof path)) {
		rc = awscred_from_file(path, prof, true, &p->cur, &insecure,
				       &e2);
		if (rc == PX_OK)
			goto out_insecure;
		if (rc != PX_ENOENT) {
			if (err)
				*err = e2;
			goto out_free;
		}
	}
	if (!opts->no_imds) {
		const char *dis = getenv("AWS_EC2_METADATA_DISABLED");

		if (!dis || strcasecmp(dis, "true") != 0) {
			rc = imds_client_new(opts->imds_endpoint,
					     opts->imds_timeout_us, &p->imds,
					     err);
			if (rc != PX_OK)
				goto out_free;
			rc = imds_role_credentials(p->imds, &p->cur, &e2);
			if (rc == PX_OK)
				goto out_ok;
		}
	}
	rc = px_errorf(err, PX_ENOENT, "no aws credentials: set "
		       "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile "
		       "'%s' in ~/.aws/credentials, or run on an instance "
		       "with a role", prof);
	goto out_free;
out_insecure:
	if (insecure)
		snprintf(p->warning, sizeof p->warning, "credentials file "
			 "'%s' is readable by group or others; chmod 600 it",
			 path);
out_ok:
	if (!p->cur.source)
		p->cur.source = AWSCRED_IMDS;
	*ret = p;
	return PX_OK;
out_free:
	awscred_provider_free(p);
	return rc;
}

void awscred_provider_free(struct awscred_provider *p)
{
	if (!p)
		return;
	imds_client_free(p->imds);
	awscred_clear(&p->cur);
	free(p);
}

enum px_err awscred_provider_get(struct awscred_provider *p, int64_t now_s,
				 struct awscred *ret, struct px_error *err)
{
	if (p->imds && p->cur.expiration_s &&
	    now_s + AWSCRED_REFRESH_S >= p->cur.expiration_s) {
		struct awscred fresh;
		enum px_err rc = imds_role_credentials(p->imds, &fresh, err);

		if (rc == PX_OK) {
			p->cur = fresh;
			awscred_clear(&fresh);
		} else if (now_s >= p->cur.expiration_s) {
			px_error_prefix(err, "refreshing expired role "
					"credentials: ");
			return rc;
		}
		/* else: still valid for a while; try again next call */
	}
	*ret = p->cur;
	return PX_OK;
}

const char *awscred_provider_warning(const struct awscred_provider *p)
{
	return p->warning[0] ? p->warning : NULL;
}

enum px_err awscred_curl_sign(struct awscred_provider *p, CURL *easy,
			      struct curl_slist **hdrs, struct px_error *err)
{
	struct awscred cr;
	struct curl_slist *t = NULL;
	enum px_err rc;
	char *tokhdr;
	size_t n;

	rc = awscred_provider_get(p, px_now_wall_us() / PX_USEC_PER_SEC, &cr,
				  err);
	if (rc != PX_OK)
		return rc;
	if (cr.session_token[0]) {
		n = strlen(cr.session_token) + 32;
		tokhdr = malloc(n);
		if (tokhdr) {
			snprintf(tokhdr, n, "X-Amz-Security-Token: %s",
				 cr.session_token);
			t = curl_slist_append(*hdrs, tokhdr);
			explicit_bzero(tokhdr, n);
			free(tokhdr);
		}
		if (!t) {
			awscred_clear(&cr);
			return px_errorf(err, PX_ENOMEM, "request headers");
		}
		*hdrs = t;
	}
	curl_easy_setopt(easy, CURLOPT_USERNAME, cr.access_key_id);
	curl_easy_setopt(easy, CURLOPT_PASSWORD, cr.secret_access_key);
	awscred_clear(&cr);
	return PX_OK;
}
