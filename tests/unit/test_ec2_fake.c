/* test_ec2_fake.c -- helpers that run the fake EC2 for the ec2 tests. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../fake_ec2/fake.h"

extern char **environ;

void fake_start(struct fake *f)
{
	const char *src = getenv("PX_SRC");
	char script[4096], line[64];
	posix_spawn_file_actions_t fa;
	int in[2], out[2];
	ssize_t n;
	size_t len = 0;

	cr_assert(src, "PX_SRC is not set (run through make test)");
	snprintf(script, sizeof script, "%s/tests/fake_ec2/fake_ec2.py", src);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	char *argv[] = { "/usr/bin/python3", script, "--timeout", "60", NULL };
	cr_assert_eq(posix_spawn(&f->pid, argv[0], &fa, NULL, argv, environ),
		     0, "cannot start the fake");
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	f->in_fd = in[1];
	while (len < sizeof line - 1) {
		n = read(out[0], line + len, 1);
		if (n <= 0 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	close(out[0]);
	cr_assert_eq(sscanf(line, "PORT %d", &f->port), 1,
		     "fake said '%s'", line);
	snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/", f->port);
}

void fake_stop(struct fake *f)
{
	if (f->pid <= 0)
		return;
	close(f->in_fd);
	kill(f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	f->pid = 0;
}

struct sbuf {
	char *p;
	size_t n;
};

static size_t sbuf_write(char *d, size_t sz, size_t nm, void *ud)
{
	struct sbuf *b = ud;

	b->p = realloc(b->p, b->n + sz * nm + 1);
	memcpy(b->p + b->n, d, sz * nm);
	b->n += sz * nm;
	b->p[b->n] = '\0';
	return sz * nm;
}

json_t *fake_ctl(struct fake *f, const char *json)
{
	char url[128];
	struct sbuf b = { 0 };
	CURL *h = curl_easy_init();
	json_error_t je;
	json_t *j;
	long st = 0;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/_ctl", f->port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (json)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sbuf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	cr_assert_eq(curl_easy_perform(h), CURLE_OK, "control request");
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(h);
	cr_assert_eq(st, 200, "control: %s", b.p ? b.p : "");
	j = json_loads(b.p, 0, &je);
	free(b.p);
	cr_assert(j, "control reply is not json");
	return j;
}

size_t fake_count(struct fake *f, const char *key)
{
	json_t *s = fake_ctl(f, NULL);
	size_t n = json_array_size(json_object_get(s, key));

	json_decref(s);
	return n;
}

struct ec2_client *fake_client(struct fake *f, const char *akid,
			       const char *secret, const char *token,
			       struct awscred_provider **ret_prov)
{
	struct awscred cr;
	struct ec2_config cfg = { 0 };
	struct ec2_client *c = NULL;
	struct px_error err;

	memset(&cr, 0, sizeof cr);
	snprintf(cr.access_key_id, sizeof cr.access_key_id, "%s", akid);
	snprintf(cr.secret_access_key, sizeof cr.secret_access_key, "%s",
		 secret);
	if (token)
		snprintf(cr.session_token, sizeof cr.session_token, "%s",
			 token);
	cr_assert_eq(awscred_provider_static(&cr, ret_prov, &err), PX_OK);
	cfg.region = "us-east-1";
	cfg.endpoint = f->url;
	cfg.creds = *ret_prov;
	cfg.backoff_base_us = 5000;
	cfg.backoff_cap_us = 40000;
	cfg.timeout_us = 3 * PX_USEC_PER_SEC;
	cfg.seed = 42;
	cr_assert_eq(ec2_client_new(&cfg, &c, &err), PX_OK, "%s", err.msg);
	return c;
}
