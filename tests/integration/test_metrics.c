/* test_metrics.c -- proteusd's /metrics (metrics_listen): a real daemon
 * with a local-world job, scraped with libcurl while the job runs and
 * after; the text checked with promtool (Debian's prometheus) and its
 * job figures against `status --json` and the ledger; bad requests, a
 * silent client, and 100 connections at once. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../common/px.h"
#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(metrics, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);

static int port;

/* The daemon with /metrics on a free loopback port. */
static void daemon_metrics(int timeout_ms)
{
	FILE *f = fopen(jt.conf, "w");

	cr_assert_not_null(f);
	port = free_port();
	fprintf(f, "db %s\ncontrol_socket %s\nlog_level info\n"
		"metrics_listen 127.0.0.1:%d\nmetrics_timeout_ms %d\n%s", jt.db,
		jt.sock, port, timeout_ms, data_dir_line());
	fclose(f);
	start_daemon();
}

struct body {
	char *p;
	size_t n;
};

static size_t take(char *p, size_t sz, size_t nm, void *ud)
{
	struct body *b = ud;
	char *q = realloc(b->p, b->n + sz * nm + 1);

	cr_assert_not_null(q);
	memcpy(q + b->n, p, sz * nm);
	b->p = q;
	b->n += sz * nm;
	b->p[b->n] = '\0';
	return sz * nm;
}

/* path with method (NULL: GET): the status code, the body into *ret
 * (the caller's), the content type into ctype (may be NULL). */
static long fetch(const char *path, const char *method, char **ret,
		  char *ctype, size_t clen)
{
	struct body b = { calloc(1, 1), 0 };
	char url[128];
	CURL *h = curl_easy_init();
	char *ct = NULL;
	long code = 0;
	CURLcode cc;

	cr_assert_not_null(h);
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, take);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (method)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	cc = curl_easy_perform(h);
	cr_assert_eq(cc, CURLE_OK, "%s: %s", url, curl_easy_strerror(cc));
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
	if (ctype)
		snprintf(ctype, clen, "%s", ct ? ct : "");
	curl_easy_cleanup(h);
	*ret = b.p;
	return code;
}

static char *scrape(void)
{
	char *text, ct[128];

	cr_assert_eq(fetch("/metrics", NULL, &text, ct, sizeof ct), 200,
		     "%s", text);
	cr_assert_str_eq(ct, "text/plain; version=0.0.4; charset=utf-8");
	return text;
}

/* The value of the sample whose line starts with what (name and labels
 * as written); NAN when there is none. */
static double sample(const char *text, const char *what)
{
	size_t n = strlen(what);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p += !!p)
		if (!strncmp(p, what, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

/* promtool check metrics on text: its verdict; skipped, saying so, when
 * promtool is not installed. */
static void promtool_ok(const char *text)
{
	const char *argv[] = { "sh", "-c", NULL, NULL };
	char *file, *cmd;
	struct pxrun r;
	FILE *f;

	if (access("/usr/bin/promtool", X_OK) != 0 &&
	    system("command -v promtool >/dev/null 2>&1") != 0) {
		cr_log_warn("promtool not installed (Debian 'prometheus', "
			    "scripts/deps.sh test): the format check is "
			    "skipped");
		return;
	}
	cr_assert(asprintf(&file, "%s/metrics.txt", jt.tmp) > 0);
	f = fopen(file, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert(asprintf(&cmd, "promtool check metrics < '%s'", file) > 0);
	argv[2] = cmd;
	cr_assert_eq(pxrun(&r, 30, "/bin/sh", argv), 0);
	cr_assert_eq(r.status, 0, "promtool: %s%s\n%s", r.out, r.err, text);
	pxrun_free(&r);
	free(cmd);
	free(file);
}

/* Scrape until the sample `what` is v or more (the text is rebuilt once
 * a second); the text then. */
static char *scrape_until(const char *what, double v)
{
	char *text = NULL;

	for (int i = 0; i < 300; i++) {
		free(text);
		text = scrape();
		if (sample(text, what) >= v)
			return text;
		sleep_ms(100);
	}
	cr_assert_fail("'%s' never %g or more in:\n%s", what, v, text);
	return NULL;
}

static void check_job(const char *text, int64_t id, json_t *st)
{
	char k[160], q[512];
	double spot, od;

#define JOB_SAMPLE(name, labels)                                            \
	(snprintf(k, sizeof k, "%s{job=\"%lld\"%s}", name, (long long)id,  \
		  labels), sample(text, k))
	spot = JOB_SAMPLE("proteus_job_cost_dollars", ",market=\"spot\"");
	od = JOB_SAMPLE("proteus_job_cost_dollars", ",market=\"on-demand\"");
	cr_assert(isfinite(spot) && isfinite(od), "%s", text);
	cr_assert_float_eq(spot + od, json_number_value(json_object_get(st,
			   "cost_usd")), 1.5e-6, "%s", text);
	/* the on-demand part is the ledger's lines of on-demand instances
	 * (allocations without a market) */
	snprintf(q, sizeof q, "SELECT coalesce(sum(l.amount_uusd), 0) FROM "
		 "ledger l JOIN instances i ON i.id = l.instance_id JOIN "
		 "allocations a ON a.id = i.alloc_id WHERE l.job_id = %lld "
		 "AND a.market_id IS NULL", (long long)id);
	cr_assert_float_eq(od, (double)sql_int(q) / 1e6, 1e-6, "%s", text);
	cr_assert_gt(od, 0, "the job's reliable m3.large is on demand");
	cr_assert_float_eq(JOB_SAMPLE(
		"proteus_job_ondemand_equivalent_dollars", ""),
		json_number_value(json_object_get(st, "fleet_ondemand_usd")),
		1e-6);
	cr_assert_eq(JOB_SAMPLE("proteus_job_evictions_total", ""),
		     (double)json_integer_value(json_object_get(st,
			     "evictions")));
	cr_assert_eq(JOB_SAMPLE("proteus_job_joins_total", ""),
		     (double)json_integer_value(json_object_get(st, "joins")));
	cr_assert_eq(JOB_SAMPLE("proteus_job_losses_total", ""),
		     (double)json_integer_value(json_object_get(st, "losses")));
	cr_assert_gt(JOB_SAMPLE("proteus_job_joins_total", ""), 0);
	cr_assert_float_eq(JOB_SAMPLE("proteus_job_test_accuracy_ratio", ""),
			   json_number_value(json_object_get(st,
				   "test_accuracy")), 1e-9);
#undef JOB_SAMPLE
}

Test(metrics, a_job_in_metrics_passes_promtool_and_agrees_with_status)
{
	char k[128];
	char *text;
	json_t *st;
	int64_t id;

	daemon_metrics(10000);
	text = scrape();
	promtool_ok(text);
	cr_assert_eq(sample(text, "proteus_build_info{version=\""
			    PX_VERSION "\"}"), 1);
	cr_assert_gt(sample(text, "proteus_start_time_seconds"), 1.6e9);
	free(text);
	/* 40 epochs: what is checked while it runs is there once its
	 * reliable node is, at its start */
	write_job(40, NULL);
	id = submit();
	/* while it runs: its fleet and money are there, and the text
	 * still passes */
	snprintf(k, sizeof k, "proteus_instances{job=\"%lld\",market=\""
		 "on-demand\",tier=\"reliable\"}", (long long)id);
	text = scrape_until(k, 1);
	promtool_ok(text);
	cr_assert_eq(sample(text, "proteus_jobs{state=\"running\"}"), 1,
		     "%s", text);
	cr_assert_geq(sample(text, "proteus_control_requests_total{command="
			     "\"submit\"}"), 1);
	cr_assert_geq(sample(text, "proteus_controller_decision_seconds_"
			     "count"), 1, "%s", text);
	free(text);
	st = wait_end(id, 200);
	cr_assert_str_eq(state_of(st), "done");
	/* after: the figures equal status's */
	text = scrape_until("proteus_jobs{state=\"done\"}", 1);
	promtool_ok(text);
	check_job(text, id, st);
	snprintf(k, sizeof k, "proteus_instances{job=\"%lld\",market=\""
		 "spot\",tier=\"transient\"}", (long long)id);
	cr_assert_eq(sample(text, k), 0, "an ended job holds nothing");
	json_decref(st);
	free(text);
}

/* A queued job has not been tested: its accuracy is absent from /metrics
 * and null in status and jobs (text: "-", "not evaluated yet"), not 0. */
Test(metrics, a_queued_jobs_accuracy_is_absent_not_0)
{
	char k[128], ids[24];
	struct pxrun r;
	char *text;
	json_t *st;
	int64_t a, b;
	FILE *f = fopen(jt.conf, "w");

	cr_assert_not_null(f);
	port = free_port();
	fprintf(f, "db %s\ncontrol_socket %s\nmax_jobs 1\n"
		"metrics_listen 127.0.0.1:%d\n%s", jt.db, jt.sock, port,
		data_dir_line());
	fclose(f);
	start_daemon();
	write_job(40, NULL);
	a = submit();
	b = submit();
	st = status(b);
	cr_assert_str_eq(state_of(st), "queued");
	cr_assert(json_is_null(json_object_get(st, "test_accuracy")), "%s",
		  json_dumps(st, 0));
	cr_assert(json_is_null(json_object_get(st, "test_loss")), "%s",
		  json_dumps(st, 0));
	json_decref(st);
	snprintf(ids, sizeof ids, "%lld", (long long)b);
	cr_assert_eq(ctl(&r, 10, "status", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "accuracy not evaluated yet"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "jobs", "--json", NULL, NULL), 0, "%s",
		     r.err);
	st = json_loads(r.out, 0, NULL);
	cr_assert_not_null(st, "%s", r.out);
	pxrun_free(&r);
	{
		json_t *x;
		size_t i;
		bool seen = false;

		json_array_foreach(json_object_get(st, "jobs"), i, x)
			if (json_integer_value(json_object_get(x, "job")) ==
			    b) {
				seen = true;
				cr_assert(json_is_null(json_object_get(x,
					  "test_accuracy")), "%s",
					  json_dumps(x, 0));
			}
		cr_assert(seen);
	}
	json_decref(st);
	text = scrape_until("proteus_jobs{state=\"queued\"}", 1);
	snprintf(k, sizeof k, "proteus_job_test_accuracy_ratio{job=\"%lld\"}",
		 (long long)b);
	cr_assert(isnan(sample(text, k)), "%s", text);
	snprintf(k, sizeof k, "proteus_job_info{job=\"%lld\"", (long long)b);
	cr_assert(strstr(text, k), "the queued job is in /metrics: %s", text);
	free(text);
	cancel_job(b, 30);
	cancel_job(a, 30);
}

/* A job the daemon takes up after a restart: the on-demand part of its
 * cost holds the bills of its earlier life too (from the store). */
Test(metrics, a_resumed_job_keeps_its_cost_by_market)
{
	char k[128];
	char *text;
	json_t *st;
	int64_t id;

	daemon_metrics(10000);
	/* the SIGTERM comes at its first on-demand cent's tenth: at 3% of
	 * a 120-epoch job, measured; the rest only has to end */
	write_job(50, NULL);
	id = submit();
	snprintf(k, sizeof k, "proteus_job_cost_dollars{job=\"%lld\",market="
		 "\"on-demand\"}", (long long)id);
	text = scrape_until(k, 0.001);
	free(text);
	stop_daemon(SIGTERM);
	start_daemon();
	st = wait_end(id, 200);
	cr_assert_str_eq(state_of(st), "done");
	cr_assert_geq(json_integer_value(json_object_get(st, "restarts")), 1);
	text = scrape_until("proteus_jobs{state=\"done\"}", 1);
	promtool_ok(text);
	check_job(text, id, st);
	json_decref(st);
	free(text);
}

Test(metrics, other_paths_methods_and_bad_requests_get_their_codes)
{
	char *text;
	struct pxrun r;

	daemon_metrics(10000);
	cr_assert_eq(fetch("/metrics", "POST", &text, NULL, 0), 405);
	free(text);
	cr_assert_eq(fetch("/metrics", "DELETE", &text, NULL, 0), 405);
	free(text);
	cr_assert_eq(fetch("/", NULL, &text, NULL, 0), 404);
	free(text);
	cr_assert_eq(fetch("/metricsx", NULL, &text, NULL, 0), 404);
	free(text);
	cr_assert_eq(fetch("/metrics?x=1", NULL, &text, NULL, 0), 200);
	free(text);
	text = scrape_until("proteus_metrics_requests_total{code=\"405\"}", 2);
	cr_assert_geq(sample(text, "proteus_metrics_requests_total{code="
			     "\"404\"}"), 2);
	free(text);
	/* a bad config value names its key */
	{
		FILE *f = fopen(jt.conf, "w");
		const char *argv[] = { "proteusd", "--config", jt.conf,
				       "--check-config", NULL };

		cr_assert_not_null(f);
		fprintf(f, "db %s\nmetrics_listen localhost:9464\n", jt.db);
		fclose(f);
		cr_assert_eq(pxrun(&r, 10, "proteusd", argv), 0);
		cr_assert_eq(r.status, 3);
		cr_assert(strstr(r.err, "'metrics_listen': 'localhost:9464' "
				 "is not ADDRESS:PORT"), "%s", r.err);
		pxrun_free(&r);
	}
}

static int dial(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "%s",
		     strerror(errno));
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		cr_assert_gt(w, 0, "%s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* Everything until the server closes (at most 30 s: then it failed). */
static char *recv_until_close(int fd)
{
	struct body b = { calloc(1, 1), 0 };
	char buf[4096];
	ssize_t r;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		cr_assert_eq(poll(&pf, 1, 30000), 1, "no answer, no close");
		r = recv(fd, buf, sizeof buf, 0);
		if (r <= 0)
			break;
		take(buf, 1, (size_t)r, &b);
	}
	return b.p;
}

/* req (n bytes) on a connection of its own: the whole answer. */
static char *exchange(const char *req, size_t n)
{
	int fd = dial();
	char *out;

	send_all(fd, req, n);
	out = recv_until_close(fd);
	close(fd);
	return out;
}

Test(metrics, over_long_and_malformed_requests_are_refused)
{
	char big[10000];
	char *out;

	daemon_metrics(10000);
	/* a head over 8 KiB, never ended: 431, and the daemon goes on */
	memset(big, 'a', sizeof big);
	memcpy(big, "GET /metrics HTTP/1.1\r\nX-Big: ", 30);
	out = exchange(big, sizeof big);
	cr_assert(!strncmp(out, "HTTP/1.1 431 ", 13), "%s", out);
	free(out);
	out = exchange("HELLO\r\n\r\n", 9);
	cr_assert(!strncmp(out, "HTTP/1.1 400 ", 13), "%s", out);
	free(out);
	out = exchange("GET /metrics HTTP/2.0\r\n\r\n", 25);
	cr_assert(!strncmp(out, "HTTP/1.1 400 ", 13), "%s", out);
	free(out);
	/* a bare-LF head is HTTP too, and HEAD has no body */
	out = exchange("HEAD /metrics HTTP/1.0\n\n", 24);
	cr_assert(!strncmp(out, "HTTP/1.1 200 ", 13), "%s", out);
	cr_assert(strstr(out, "\r\n\r\n") && !strstr(out, "# TYPE"), "%s",
		  out);
	free(out);
	out = scrape();
	free(out);
}

Test(metrics, a_silent_client_is_dropped_and_ping_is_not_held)
{
	struct pxrun r;
	char *text, *out;
	int fd;

	daemon_metrics(300);
	fd = dial();
	/* while it holds a connection: the daemon answers */
	cr_assert_eq(ctl(&r, 10, "ping", NULL, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	text = scrape();
	free(text);
	/* dropped at the deadline: the server closes without an answer */
	out = recv_until_close(fd);
	cr_assert_str_eq(out, "");
	free(out);
	close(fd);
	text = scrape_until("proteus_metrics_timeouts_total", 1);
	free(text);
	cr_assert_eq(ctl(&r, 10, "ping", NULL, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
}

Test(metrics, a_hundred_connections_at_once_are_all_served_in_turn)
{
	enum { N = 100 };
	int fd[N];
	struct pxrun r;
	char *out;

	daemon_metrics(10000);
	/* all connected (the listen backlog holds those over the 64 the
	 * server takes), all asking */
	for (int i = 0; i < N; i++)
		fd[i] = dial();
	for (int i = 0; i < N; i++)
		send_all(fd[i], "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
			 35);
	cr_assert_eq(ctl(&r, 10, "ping", NULL, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	for (int i = 0; i < N; i++) {
		out = recv_until_close(fd[i]);
		cr_assert(!strncmp(out, "HTTP/1.1 200 ", 13), "%d: %s", i,
			  out);
		cr_assert(strstr(out, "# TYPE proteus_jobs gauge"), "%d", i);
		free(out);
		close(fd[i]);
	}
	out = scrape_until("proteus_metrics_requests_total{code=\"200\"}",
			   N + 1);
	free(out);
}
