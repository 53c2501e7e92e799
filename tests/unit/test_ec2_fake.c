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

static void start(struct fake *f, const char *rel, const char *const *args,
		  bool keep_out)
{
	const char *src = getenv("PX_SRC");
	char script[4096], line[64];
	const char *argv[48];
	posix_spawn_file_actions_t fa;
	int in[2], out[2];
	size_t len = 0, n_argv = 0;
	ssize_t n;

	cr_assert(src, "PX_SRC is not set (run through make test)");
	snprintf(script, sizeof script, "%s/%s", src, rel);
	argv[n_argv++] = "/usr/bin/python3";
	argv[n_argv++] = script;
	argv[n_argv++] = "--timeout";
	argv[n_argv++] = "60";
	for (size_t i = 0; args && args[i]; i++) {
		cr_assert_lt(n_argv, sizeof argv / sizeof *argv - 1);
		argv[n_argv++] = args[i];
	}
	argv[n_argv] = NULL;
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	cr_assert_eq(posix_spawn(&f->pid, argv[0], &fa, NULL,
				 (char *const *)argv, environ),
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
	if (keep_out) {
		f->out_fd = out[0];
	} else {
		close(out[0]);
		f->out_fd = -1;
	}
	cr_assert_eq(sscanf(line, "PORT %d", &f->port), 1,
		     "fake said '%s'", line);
	snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/", f->port);
}

void fake_start(struct fake *f)
{
	static const char *const api_only[] = {
		"--no-exec", "--boot-seconds", "0", "--shutdown-seconds", "0",
		NULL };

	start(f, "tests/fake_ec2/fake_ec2.py", api_only, false);
}

void fake_start_args(struct fake *f, const char *const *args)
{
	start(f, "tests/fake_ec2/fake_ec2.py", args, true);
}

void fake_start_script(struct fake *f, const char *script,
		       const char *const *args)
{
	start(f, script, args, false);
}

void fake_stop(struct fake *f)
{
	if (f->pid <= 0)
		return;
	close(f->in_fd);
	kill(f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	if (f->out_fd >= 0)
		close(f->out_fd);
	f->out_fd = -1;
	f->pid = 0;
}

json_t *fake_finish(struct fake *f)
{
	char buf[1024];
	size_t len = 0;
	ssize_t n;
	json_error_t je;
	json_t *j;
	int st = 0;

	cr_assert(f->pid > 0 && f->out_fd >= 0, "fake_finish: not running "
		  "(fake_start_args)");
	close(f->in_fd);
	while (len < sizeof buf - 1 &&
	       (n = read(f->out_fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(f->out_fd);
	f->out_fd = -1;
	waitpid(f->pid, &st, 0);
	f->pid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the fake's exit: %d",
		  st);
	j = json_loads(buf, 0, &je);
	cr_assert(j, "the fake's last line is not JSON: '%s'", buf);
	return j;
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

char *fake_get(struct fake *f, const char *query, long *status)
{
	char url[512];
	struct sbuf b = { 0 };
	CURL *h = curl_easy_init();

	snprintf(url, sizeof url, "http://127.0.0.1:%d/_ctl?%s", f->port,
		 query);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sbuf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	cr_assert_eq(curl_easy_perform(h), CURLE_OK, "control GET %s", query);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(h);
	if (!b.p)
		b.p = calloc(1, 1);
	return b.p;
}

json_t *fake_get_json(struct fake *f, const char *query)
{
	long st = 0;
	char *body = fake_get(f, query, &st);
	json_error_t je;
	json_t *j;

	cr_assert_eq(st, 200, "GET /_ctl?%s: %ld %s", query, st, body);
	j = json_loads(body, 0, &je);
	cr_assert(j, "GET /_ctl?%s: not JSON: %s", query, body);
	free(body);
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
