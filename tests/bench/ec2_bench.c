/* ec2_bench.c -- benchmark driver for the EC2 client (bench_ec2.sh builds
 * it against build/libproteus.a): calls per second with N calls in flight
 * on one multi handle, client CPU per call, memory per call in flight, and
 * the same loop over plain libcurl (unsigned GET, no XML) for comparison.
 *
 *   ec2_bench rate URL INFLIGHT TOTAL   signed DescribeSpotPriceHistory
 *   ec2_bench raw  URL INFLIGHT TOTAL   unsigned GET URL (plain curl multi)
 *   ec2_bench mem  URL INFLIGHT         INFLIGHT calls held by the server
 *
 * Credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.  One line of
 * "key=value" results on stdout.
 */
#include <curl/curl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../../cloudapi/ec2_api.h"

struct bench {
	struct ec2_client *c;
	long started, done, failed, total;
	char msg[256];
};

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, rss = 0;

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss * 4;
}

static int start_one(struct bench *b);

static void on_done(enum px_err rc, struct ec2_response *resp,
		    const struct px_error *err,
		    const struct ec2_aws_error *aws, void *ctx)
{
	struct bench *b = ctx;

	b->done++;
	if (rc != PX_OK) {
		b->failed++;
		if (!b->msg[0] && err)
			snprintf(b->msg, sizeof b->msg, "%.200s", err->msg);
		return;
	}
	if (b->started < b->total)
		start_one(b);
}

static int start_one(struct bench *b)
{
	struct ec2_params p;
	struct px_error err;

	ec2_params_init(&p, "DescribeSpotPriceHistory");
	ec2_params_add(&p, "InstanceType.1", "c4.large");
	ec2_params_add(&p, "ProductDescription.1", "Linux/UNIX");
	ec2_params_add(&p, "MaxResults", "5");
	b->started++;
	if (ec2_call_start(b->c, &p, on_done, b, &err) != PX_OK) {
		fprintf(stderr, "ec2_bench: %s\n", err.msg);
		b->done++;
		b->failed++;
		return -1;
	}
	return 0;
}

static struct ec2_client *client(const char *url,
				 struct awscred_provider **prov)
{
	struct awscred cr;
	struct ec2_config cfg = { 0 };
	struct ec2_client *c = NULL;
	struct px_error err;

	if (awscred_from_env(&cr, &err) != PX_OK ||
	    awscred_provider_static(&cr, prov, &err) != PX_OK) {
		fprintf(stderr, "ec2_bench: %s\n", err.msg);
		exit(1);
	}
	awscred_clear(&cr);
	cfg.region = "us-east-1";
	cfg.endpoint = url;
	cfg.creds = *prov;
	cfg.max_attempts = 1;
	cfg.timeout_us = 60 * PX_USEC_PER_SEC;
	if (ec2_client_new(&cfg, &c, &err) != PX_OK) {
		fprintf(stderr, "ec2_bench: %s\n", err.msg);
		exit(1);
	}
	return c;
}

static int bench_rate(const char *url, long inflight, long total)
{
	struct awscred_provider *prov;
	struct bench b = { .total = total };
	double c0, t0, secs, cpu;

	b.c = client(url, &prov);
	/* warm up: one call opens a connection */
	b.total = 1;
	start_one(&b);
	while (b.done < 1)
		ec2_client_step(b.c, 1000);
	b = (struct bench){ .c = b.c, .total = total };
	t0 = (double)px_now_mono_us() / 1e6;
	c0 = cpu_s();
	for (long i = 0; i < inflight && b.started < total; i++)
		start_one(&b);
	while (b.done < b.started)
		ec2_client_step(b.c, 1000);
	secs = (double)px_now_mono_us() / 1e6 - t0;
	cpu = cpu_s() - c0;
	printf("mode=rate inflight=%ld calls=%ld failed=%ld secs=%.3f "
	       "calls_per_s=%.0f client_cpu_us_per_call=%.1f%s%s\n",
	       inflight, b.done, b.failed, secs, (double)b.done / secs,
	       cpu * 1e6 / (double)b.done, b.msg[0] ? " first_error=" : "",
	       b.msg);
	ec2_client_free(b.c);
	awscred_provider_free(prov);
	return b.failed ? 1 : 0;
}

static size_t sink(char *p, size_t sz, size_t nm, void *ud)
{
	(void)p;
	(void)ud;
	return sz * nm;
}

static int bench_raw(const char *url, long inflight, long total)
{
	CURLM *m = curl_multi_init();
	CURL **h = calloc((size_t)inflight, sizeof *h);
	long started = 0, done = 0, failed = 0;
	double t0, c0, secs, cpu;
	int running;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	t0 = (double)px_now_mono_us() / 1e6;
	c0 = cpu_s();
	for (long i = 0; i < inflight && started < total; i++, started++) {
		h[i] = curl_easy_init();
		curl_easy_setopt(h[i], CURLOPT_URL, url);
		curl_easy_setopt(h[i], CURLOPT_WRITEFUNCTION, sink);
		curl_multi_add_handle(m, h[i]);
	}
	while (done < started) {
		CURLMsg *msg;
		int left;

		curl_multi_poll(m, NULL, 0, 1000, NULL);
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			long st = 0;
			CURL *e = msg->easy_handle;

			if (msg->msg != CURLMSG_DONE)
				continue;
			done++;
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
			failed += msg->data.result != CURLE_OK || st != 200;
			curl_multi_remove_handle(m, e);
			if (started < total) {
				started++;
				curl_multi_add_handle(m, e);
			}
		}
	}
	secs = (double)px_now_mono_us() / 1e6 - t0;
	cpu = cpu_s() - c0;
	printf("mode=raw inflight=%ld calls=%ld failed=%ld secs=%.3f "
	       "calls_per_s=%.0f client_cpu_us_per_call=%.1f\n", inflight,
	       done, failed, secs, (double)done / secs,
	       cpu * 1e6 / (double)done);
	for (long i = 0; i < inflight; i++)
		curl_easy_cleanup(h[i]);
	free(h);
	curl_multi_cleanup(m);
	return failed ? 1 : 0;
}

/* The server holds each call (the script sets a slow fault first): start
 * INFLIGHT calls, let them connect and send, then measure. */
static int bench_mem(const char *url, long inflight)
{
	struct awscred_provider *prov;
	struct bench b = { .total = inflight };
	struct mallinfo2 m0, m1;
	long r0, r1;
	uint64_t until;

	b.c = client(url, &prov);
	malloc_trim(0);
	m0 = mallinfo2();
	r0 = rss_kib();
	for (long i = 0; i < inflight; i++)
		start_one(&b);
	until = px_now_mono_us() + 500000;
	while (px_now_mono_us() < until)
		ec2_client_step(b.c, 50);
	m1 = mallinfo2();
	r1 = rss_kib();
	printf("mode=mem inflight=%ld pending=%zu done_early=%ld "
	       "heap_bytes_per_call=%.0f rss_kib_per_call=%.1f\n", inflight,
	       ec2_client_pending(b.c), b.done,
	       (double)(m1.uordblks - m0.uordblks) / (double)inflight,
	       (double)(r1 - r0) / (double)inflight);
	while (b.done < b.started)
		ec2_client_step(b.c, 1000);
	ec2_client_free(b.c);
	awscred_provider_free(prov);
	return 0;
}

static long num(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < 1 || v > 1000000) {
		fprintf(stderr, "ec2_bench: '%s' is not a count\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "rate"))
		return bench_rate(argv[2], num(argv[3]), num(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "raw"))
		return bench_raw(argv[2], num(argv[3]), num(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "mem"))
		return bench_mem(argv[2], num(argv[3]));
	fprintf(stderr, "usage: ec2_bench rate|raw URL INFLIGHT TOTAL\n"
			"       ec2_bench mem URL INFLIGHT\n");
	return 2;
}
