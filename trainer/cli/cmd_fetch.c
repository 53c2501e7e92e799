/* cmd_fetch.c -- `proteus-trainer fetch URL`: a data file by URL into this
 * host's cache, checked by its SHA-256, and its path printed.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../../cloudapi/fetch.h"
#include "tcli.h"

/* fetch URL: the file on this host, checked; its path on stdout.  A
 * SIGTERM or SIGINT stops a download (exit 1). */
int tx_cmd_fetch(const struct subcmd *sc, int argc, char **argv)
{
	struct px_error err = { 0 };
	struct fetch_opts fo = { 0 };
	struct fetch_result r;
	struct fetch_url u = { 0 };
	struct tcli t;
	const char *url;
	enum px_err e;
	int rc;

	tcli_default(&t, sc);
	rc = tx_parse(sc, argc, argv, &t, NULL, NULL);
	if (rc >= 0)
		return rc;
	url = argv[argc - 1];
	if (fetch_url_parse(url, &u, &err) != PX_OK)
		return tx_usage(sc, "%s", err.msg);
	if (u.kind != FETCH_LOCAL && !t.f.sha256) {
		rc = tx_usage(sc, "%s: a remote URL needs --sha256 HEX",
			      u.shown);
		goto out;
	}
	if (t.f.sha256 && !fetch_sha256_valid(t.f.sha256)) {
		rc = tx_usage(sc, "bad --sha256 '%s' (64 hex digits)",
			      t.f.sha256);
		goto out;
	}
	tx_take_stop_signals();
	fo.cache_dir = t.f.cache;
	fo.max_bytes = t.f.max_bytes;
	fo.stop = &tx_stop_flag;
	e = fetch_file(&fo, url, t.f.sha256, &r, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		/* not the file named: bad data; anything else a failure */
		rc = e == PX_EINVAL || e == PX_ETOOBIG ? TX_DATA : TX_FAIL;
		goto out;
	}
	if (t.o.json) {
		json_t *j = json_pack("{s:s, s:s, s:I, s:s, s:b}", "url",
				      u.shown, "path", r.path, "bytes",
				      (json_int_t)r.bytes, "sha256", r.sha256,
				      "cached", r.cached);

		rc = tx_print_json(stdout, j);
		json_decref(j);
	} else {
		rc = printf("%s\n", r.path) < 0 || fflush(stdout) ? -1 : 0;
	}
	if (rc)
		log_err("result: %s", strerror(errno));
	rc = rc ? TX_FAIL : TX_OK;
out:
	fetch_url_release(&u);
	return rc;
}
