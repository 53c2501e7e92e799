/* data_url.c -- a job's data named by URL (data_url.h). */
#include "data_url.h"

#include <stdlib.h>
#include <string.h>

#include "../../cloudapi/fetch.h"
#include "../../common/log.h"

bool data_is_url(const char *s)
{
	const char *p = s ? strstr(s, "://") : NULL;

	if (!p || p == s)
		return false;
	for (const char *c = s; c < p; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		      *c == '+' || *c == '-' || *c == '.'))
			return false;
	return true;
}

enum px_err data_url_format(const char *url, enum data_format *ret,
			    struct px_error *err)
{
	char shown[FETCH_SHOWN_MAX];

	/* the shown form is the URL less its credentials and query; its
	 * path is what names the format */
	fetch_url_shown(url, shown, sizeof shown);
	shown[strcspn(shown, "?")] = '\0';
	return data_format_of(shown, ret, err);
}

/* One file: *path replaced by the file to read. */
static enum px_err one(const char *what, const char **path, const char *sha,
		       enum data_format *fmt, struct px_error *err)
{
	/* a peer that never answers (a TLS handshake that never comes, a
	 * trickle) fails in under 20 s, naming the URL: before a job's stall
	 * watchdog (stall_seconds, 20 by default) takes it for a wedged
	 * trainer */
	struct fetch_opts fo = {
		.max_attempts = 2,
		.connect_timeout_us = 8 * PX_USEC_PER_SEC,
		.backoff_base_us = PX_USEC_PER_SEC / 2,
		.low_speed_bytes = 1024,
		.low_speed_time_s = 8,
	};
	struct fetch_result r;
	enum data_format f = *fmt;
	bool url = data_is_url(*path);
	char shown[FETCH_SHOWN_MAX];
	char *keep;
	enum px_err e;

	if (!url && !sha)
		return PX_OK;
	fetch_url_shown(*path, shown, sizeof shown);
	if (url && !sha)
		return px_errorf(err, PX_EINVAL, "%s %s: a file named by URL "
				 "needs its SHA-256 (--%s-sha256, or the job "
				 "spec's trainer.data.%s_sha256)", what, shown,
				 what, what);
	if (!fetch_sha256_valid(sha))
		return px_errorf(err, PX_EINVAL, "--%s-sha256: 64 hex digits "
				 "expected", what);
	if (url && f == DATA_FMT_AUTO) {
		/* the cached file's name says nothing: the URL's does */
		e = data_url_format(*path, &f, err);
		if (e != PX_OK)
			return e;
	}
	if (url && f == DATA_FMT_IDX)
		return px_errorf(err, PX_EINVAL, "%s %s: an IDX set by URL is "
				 "not supported (its labels file is found by "
				 "its name): use LIBSVM or CSV, or a path",
				 what, shown);
	e = fetch_file(&fo, *path, sha, &r, err);
	if (e != PX_OK)
		return e;
	if (url)
		log_notice("%s data %s: %s (%llu bytes%s)", what, shown,
			   r.path, (unsigned long long)r.bytes,
			   r.cached ? ", cached" : "");
	if (!(keep = strdup(r.path)))
		return px_errorf(err, PX_ENOMEM, "out of memory");
	*path = keep;   /* until exit: the spec's strings are argv's */
	*fmt = f;
	return PX_OK;
}

enum px_err data_fetch_urls(struct data_spec *spec, const char *train_sha,
			    const char *test_sha, struct px_error *err)
{
	enum data_format ft = spec->format, fs = spec->format;
	enum px_err e = PX_OK;

	if (spec->train)
		e = one("train", &spec->train, train_sha, &ft, err);
	if (e == PX_OK && spec->test)
		e = one("test", &spec->test, test_sha, &fs, err);
	if (e != PX_OK)
		return e;
	if (spec->format == DATA_FMT_AUTO && (ft != DATA_FMT_AUTO ||
					      fs != DATA_FMT_AUTO)) {
		/* a URL fixed it; the other file (a path) must agree */
		enum data_format a = ft, b = fs;

		if (a == DATA_FMT_AUTO && data_format_of(spec->train, &a, err))
			return err->code;
		if (b == DATA_FMT_AUTO && data_format_of(spec->test, &b, err))
			return err->code;
		if (a != b)
			return px_errorf(err, PX_EINVAL, "the training set is "
					 "%s and the test set %s by their "
					 "names: name one format "
					 "(--data-format)",
					 data_format_name(a),
					 data_format_name(b));
		spec->format = a;
	}
	return PX_OK;
}
