/* awscred.h -- AWS credentials and region, in the SDKs' order.
 *
 * Chain: environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN), then the shared credentials file
 * (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, profile AWS_PROFILE
 * or "default"), then the config file (AWS_CONFIG_FILE or ~/.aws/config,
 * "[profile NAME]"), then IMDSv2 role credentials, refreshed before they
 * expire.  Secrets are kept in memory only, wiped on release, and never
 * copied into an error message.  This module does not log: a credentials
 * file readable by others is reported through awscred_provider_warning().
 */
#ifndef PX_AWSCRED_H
#define PX_AWSCRED_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "../common/px.h"

#define AWSCRED_FILE_MAX (1u << 20)   /* bound on a credentials file */
#define AWSCRED_REFRESH_S (15 * 60)   /* refresh this long before expiry */

enum awscred_source {
	AWSCRED_NONE = 0,
	AWSCRED_STATIC,   /* given in code (tests) */
	AWSCRED_ENV,
	AWSCRED_FILE,     /* shared credentials file */
	AWSCRED_CONFIG,   /* config file */
	AWSCRED_IMDS,     /* instance role */
	AWSCRED_SOURCE_MAX
};

struct awscred {
	char access_key_id[128];
	char secret_access_key[128];
	char session_token[4096];   /* "" when none */
	int64_t expiration_s;       /* Unix seconds; 0: never expires */
	enum awscred_source source;
};

/* Wipe (explicit_bzero) a credentials struct. */
void awscred_clear(struct awscred *c);
const char *awscred_source_name(enum awscred_source s);

/* Environment: PX_ENOENT when the two variables are not both set. */
enum px_err awscred_from_env(struct awscred *ret, struct px_error *err);

/* An INI file, section [profile] (config style "[profile NAME]" when
 * config_style and profile is not "default").  PX_ENOENT when the file or
 * the section or its keys are missing.  *ret_insecure (optional) is set
 * when the file is readable or writable by group or others. */
enum px_err awscred_from_file(const char *path, const char *profile,
			      bool config_style, struct awscred *ret,
			      bool *ret_insecure, struct px_error *err);

/* Region: AWS_REGION, AWS_DEFAULT_REGION, then "region" of the profile in
 * the config file.  PX_ENOENT when none. */
enum px_err awscred_region(char *buf, size_t len, struct px_error *err);

struct awscred_opts {
	const char *profile;       /* NULL: $AWS_PROFILE, else "default" */
	bool no_imds;              /* skip the IMDS step */
	const char *imds_endpoint; /* NULL: see imds.h */
	uint64_t imds_timeout_us;  /* 0: 1 s */
};

struct awscred_provider;

/* Resolve the chain now.  PX_ENOENT when no source has credentials. */
enum px_err awscred_provider_new(const struct awscred_opts *opts,
				 struct awscred_provider **ret,
				 struct px_error *err);
/* A provider that always returns c (tests, explicit credentials). */
enum px_err awscred_provider_static(const struct awscred *c,
				    struct awscred_provider **ret,
				    struct px_error *err);
void awscred_provider_free(struct awscred_provider *p);
/* Current credentials; IMDS credentials are fetched again when they
 * expire within AWSCRED_REFRESH_S of now_s (a short blocking call, bounded
 * by the IMDS timeout). */
enum px_err awscred_provider_get(struct awscred_provider *p, int64_t now_s,
				 struct awscred *ret, struct px_error *err);
/* A warning for the operator (e.g. a file readable by others), or NULL. */
const char *awscred_provider_warning(const struct awscred_provider *p);

/* Hand p's current credentials (awscred_provider_get, so refreshed when
 * due) to a libcurl request that CURLOPT_AWS_SIGV4 signs: the key pair as
 * CURLOPT_USERNAME/PASSWORD, and an "X-Amz-Security-Token" header appended
 * to *hdrs when there is a session token (libcurl signs every x-amz-*
 * header it sends).  The caller sets CURLOPT_AWS_SIGV4 and, after this,
 * CURLOPT_HTTPHEADER to *hdrs, and frees the list (on failure too: what
 * was appended stays in it).  The copies on this stack are wiped. */
enum px_err awscred_curl_sign(struct awscred_provider *p, CURL *easy,
			      struct curl_slist **hdrs, struct px_error *err);

#endif
