/* test_outbound.c -- a job's outbound URLs against the operator's rules
 * (agent/outbound.h): notify_url_allow, data_url_allow, data_s3_allowed,
 * the addresses never reached, a name by its addresses ("localhost"),
 * what the trainer can fetch, and messages without a query or
 * credentials; the address classes and the shown form of a URL
 * (cloudapi/fetch.h). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "../../agent/config.h"
#include "../../agent/jobreq.h"
#include "../../agent/outbound.h"
#include "../../cloudapi/fetch.h"

static struct proteusd_config cfg;
static struct job_request req;

static void setup(void)
{
	struct config_diag d = {0};

	cr_assert_eq(config_defaults(&cfg, &d), PX_OK);
	config_diag_release(&d);
	memset(&req, 0, sizeof req);
}

TestSuite(outbound, .init = setup);

/* The check of req against cfg: PX_OK, or the error's text in msg. */
static enum px_err check(char *msg, size_t len)
{
	struct px_error err = {0};
	enum px_err e = outbound_check_job(&req, &cfg, "job.json", &err);

	snprintf(msg, len, "%s", e == PX_OK ? "" : err.msg);
	return e;
}

static void notify(const char *url)
{
	snprintf(req.notify_url, sizeof req.notify_url, "%s", url);
}

static void data(const char *train, const char *test)
{
	snprintf(req.trainer.data.train, sizeof req.trainer.data.train, "%s",
		 train);
	snprintf(req.trainer.data.test, sizeof req.trainer.data.test, "%s",
		 test);
}

static void allow(char *list, const char *v)
{
	snprintf(list, CONFIG_LIST_MAX, "%s", v);
}

#define REFUSED(says) do { \
	char m_[1024]; \
	cr_assert_eq(check(m_, sizeof m_), PX_EINVAL, "accepted"); \
	cr_assert_not_null(strstr(m_, (says)), "%s", m_); \
} while (0)

#define TAKEN() do { \
	char m_[1024]; \
	cr_assert_eq(check(m_, sizeof m_), PX_OK, "%s", m_); \
} while (0)

Test(outbound, a_jobs_notify_url_needs_the_list)
{
	notify("https://93.184.216.34/hook");
	REFUSED("job.json: notify_url: notify_url_allow is empty");
	allow(cfg.notify_url_allow, "https://93.184.216.34");
	TAKEN();
	notify("https://93.184.216.34:8443/hook");
	REFUSED("notify_url: https://93.184.216.34:8443 is not allowed by "
		"notify_url_allow");
	notify("http://93.184.216.34/hook");
	REFUSED("is not allowed");       /* another scheme */
	allow(cfg.notify_url_allow, "http://127.0.0.1:8080, https://*");
	notify("https://93.184.216.34:8443/hook");
	TAKEN();                          /* any public host, any port */
	notify("http://127.0.0.1:8080/x?token=1");
	TAKEN();
	notify("http://127.0.0.1:8081/x");
	REFUSED("http://127.0.0.1:8081 is not allowed");
	notify("https://10.0.0.7/x");     /* private: not public */
	REFUSED("https://10.0.0.7:443 is not allowed");
	notify("https://[fc00::1]/x");
	REFUSED("is not allowed");
}

Test(outbound, link_local_and_metadata_whatever_the_list_says)
{
	allow(cfg.notify_url_allow, "http://169.254.169.254, http://*, "
	      "http://[fd00:ec2::254], http://[fe80::1]");
	notify("http://169.254.169.254/latest/meta-data/");
	REFUSED("169.254.169.254 is a link-local, metadata");
	notify("http://[fd00:ec2::254]/latest/");
	REFUSED("fd00:ec2::254 is a link-local");
	notify("http://[fe80::1]/");
	REFUSED("fe80::1 is a link-local");
	notify("http://[::ffff:169.254.169.254]/");
	REFUSED("link-local");
	notify("http://0.0.0.0/");
	REFUSED("unspecified");
}

/* A name is its addresses: "localhost" is loopback, not public. */
Test(outbound, a_name_that_resolves_to_loopback)
{
	allow(cfg.notify_url_allow, "http://*");
	notify("http://localhost:9999/x");
	REFUSED("not allowed by notify_url_allow");
	allow(cfg.notify_url_allow, "http://localhost:9999");
	TAKEN();
	notify("http://localhost:9998/x");
	REFUSED("not allowed by notify_url_allow");
}

Test(outbound, never_the_daemons_own_metrics)
{
	char why[256];

	snprintf(cfg.metrics_listen, sizeof cfg.metrics_listen,
		 "127.0.0.1:9464");
	snprintf(cfg.metrics_host, sizeof cfg.metrics_host, "127.0.0.1");
	cfg.metrics_port = 9464;
	allow(cfg.notify_url_allow, "http://127.0.0.1:9464, "
	      "http://localhost:9464");
	notify("http://127.0.0.1:9464/metrics");
	REFUSED("port 9464 is this daemon's own /metrics");
	notify("http://localhost:9464/metrics");
	REFUSED("own /metrics");
	cr_assert(outbound_allow_valid("http://127.0.0.1:9464", why,
				       sizeof why));
}

/* What libcurl connects to, at send time: the same rules for a job's
 * URL, only the never-list for the operator's own notify_url. */
Test(outbound, each_address_at_connect)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	char why[256];

	allow(cfg.notify_url_allow, "https://hooks.example.com");
	inet_pton(AF_INET, "169.254.169.254", &a.sin_addr);
	cr_assert_not(outbound_notify_addr_ok(&cfg, "https://hooks.example."
					      "com/x", true,
					      (struct sockaddr *)&a, sizeof a,
					      why, sizeof why));
	cr_assert_not(outbound_notify_addr_ok(&cfg, "http://ops.internal/",
					      false, (struct sockaddr *)&a,
					      sizeof a, why, sizeof why));
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	/* the name is the entry's: its address now is the operator's */
	cr_assert(outbound_notify_addr_ok(&cfg, "https://hooks.example.com/x",
					  true, (struct sockaddr *)&a,
					  sizeof a, why, sizeof why), "%s",
		  why);
	/* a name the list does not hold reaches nothing, rebound or not */
	cr_assert_not(outbound_notify_addr_ok(&cfg, "https://evil.example/x",
					      true, (struct sockaddr *)&a,
					      sizeof a, why, sizeof why));
	cr_assert(outbound_notify_addr_ok(&cfg, "http://ops.internal/", false,
					  (struct sockaddr *)&a, sizeof a,
					  why, sizeof why));
}

Test(outbound, data_urls_are_refused_at_submit)
{
	data("ftp://93.184.216.34/train.csv", "/data/test.csv");
	REFUSED("job.json: trainer.data.train: 'ftp://93.184.216.34/train.csv'"
		": unsupported scheme");
	data("/data/train.csv", "http://93.184.216.34/test.csv");
	REFUSED("job.json: trainer.data.test: http://93.184.216.34/test.csv: "
		"http:// only to this host");
	data("https://93.184.216.34/train.csv", "/data/test.csv");
	REFUSED("trainer.data.train: https://93.184.216.34/train.csv: "
		"data_url_allow is empty");
	allow(cfg.data_url_allow, "https://93.184.216.34");
	TAKEN();
	data("https://u:s3cret@93.184.216.34/train.csv", "/data/test.csv");
	REFUSED("the URL holds a user or password");
	{
		char m[1024];

		check(m, sizeof m);
		cr_assert_null(strstr(m, "s3cret"), "%s", m);
	}
	/* a format its name does not tell, a query hiding it */
	data("https://93.184.216.34/train?name=x.csv", "/data/test.csv");
	REFUSED("cannot tell its format");
	data("https://93.184.216.34/train.csv?X-Amz-Signature=abc",
	     "/data/test.csv");
	TAKEN();
	snprintf(req.trainer.data.format, sizeof req.trainer.data.format,
		 "csv");
	data("https://93.184.216.34/train?name=x", "/data/test.csv");
	TAKEN();
	req.trainer.data.format[0] = 0;
	data("https://93.184.216.34/train-images-idx3-ubyte",
	     "/data/test.csv");
	REFUSED("an IDX set by URL is not supported");
}

Test(outbound, data_url_errors_show_no_query)
{
	char m[1024];

	data("https://169.254.169.254/t.csv?X-Amz-Signature=deadbeef",
	     "/data/test.csv");
	allow(cfg.data_url_allow, "https://*");
	cr_assert_eq(check(m, sizeof m), PX_EINVAL);
	cr_assert_not_null(strstr(m, "trainer.data.train: https://169.254."
				  "169.254/t.csv?...: "), "%s", m);
	cr_assert_null(strstr(m, "deadbeef"), "%s", m);
	data("gopher://h/x?X-Amz-Signature=deadbeef", "/data/test.csv");
	cr_assert_eq(check(m, sizeof m), PX_EINVAL);
	cr_assert_null(strstr(m, "deadbeef"), "%s", m);
	data("https://93.184.216.34/train?X-Amz-Signature=deadbeef",
	     "/data/test.csv");
	cr_assert_eq(check(m, sizeof m), PX_EINVAL);
	cr_assert_not_null(strstr(m, "cannot tell its format"), "%s", m);
	cr_assert_null(strstr(m, "deadbeef"), "%s", m);
}

/* A data URL's loopback: only named as this host, and only as listed. */
Test(outbound, data_urls_on_this_host)
{
	data("http://127.0.0.1:8000/train.csv", "/data/test.csv");
	REFUSED("data_url_allow is empty");
	allow(cfg.data_url_allow, "https://*");
	REFUSED("http://127.0.0.1:8000 is not allowed by data_url_allow");
	data("https://localhost/train.csv", "/data/test.csv");
	REFUSED("is not allowed by data_url_allow");
	allow(cfg.data_url_allow, "http://127.0.0.1:8000, "
	      "http://localhost:8000");
	data("http://127.0.0.1:8000/train.csv", "http://localhost:8000/t.csv");
	TAKEN();
}

Test(outbound, s3_needs_data_s3_allowed)
{
	data("s3://my-data/sets/train.csv", "/data/test.csv");
	REFUSED("job.json: trainer.data.train: s3://my-data/sets/train.csv: "
		"s3:// data is fetched with this daemon's AWS credentials, "
		"and data_s3_allowed is no");
	cfg.data_s3_allowed = 1;
	TAKEN();
	data("/data/train.csv", "s3://my-data/sets/test.csv");
	TAKEN();
}

Test(outbound, allow_lists_as_the_config_reads_them)
{
	char why[256];

	cr_assert(outbound_allow_valid("", why, sizeof why));
	cr_assert(outbound_allow_valid("https://a.example, http://[::1]:80, "
				       "https://*, http://10.0.0.1:8080/", why,
				       sizeof why), "%s", why);
	cr_assert_not(outbound_allow_valid("ftp://a.example", why,
					   sizeof why));
	cr_assert_not_null(strstr(why, "'ftp://a.example' is not an origin"),
			   "%s", why);
	cr_assert_not(outbound_allow_valid("https://a.example/path", why,
					   sizeof why));
	cr_assert_not(outbound_allow_valid("https://u@a.example", why,
					   sizeof why));
	cr_assert_not(outbound_allow_valid("https://*.example", why,
					   sizeof why));
	cr_assert_not(outbound_allow_valid("https://a:0", why, sizeof why));
	cr_assert_not(outbound_allow_valid("https://a,,https://b", why,
					   sizeof why));
}

static enum fetch_addr_class class_of(const char *ip)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

	if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1)
		a4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1)
		a6->sin6_family = AF_INET6;
	else
		cr_assert_fail("%s", ip);
	return fetch_addr_class((struct sockaddr *)&ss);
}

Test(outbound, address_classes)
{
	cr_assert_eq(class_of("169.254.169.254"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("169.254.0.1"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("0.0.0.0"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("fd00:ec2::254"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("fe80::1"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("febf::1"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("::"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("::ffff:169.254.169.254"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("64:ff9b::a9fe:a9fe"), FETCH_ADDR_NEVER);
	cr_assert_eq(class_of("127.0.0.1"), FETCH_ADDR_LOOPBACK);
	cr_assert_eq(class_of("127.9.9.9"), FETCH_ADDR_LOOPBACK);
	cr_assert_eq(class_of("::1"), FETCH_ADDR_LOOPBACK);
	cr_assert_eq(class_of("::ffff:127.0.0.1"), FETCH_ADDR_LOOPBACK);
	cr_assert_eq(class_of("10.1.2.3"), FETCH_ADDR_PRIVATE);
	cr_assert_eq(class_of("172.31.0.1"), FETCH_ADDR_PRIVATE);
	cr_assert_eq(class_of("192.168.1.1"), FETCH_ADDR_PRIVATE);
	cr_assert_eq(class_of("100.64.0.1"), FETCH_ADDR_PRIVATE);
	cr_assert_eq(class_of("224.0.0.1"), FETCH_ADDR_PRIVATE);
	cr_assert_eq(class_of("fd12::1"), FETCH_ADDR_PRIVATE);
	cr_assert_eq(class_of("172.32.0.1"), FETCH_ADDR_PUBLIC);
	cr_assert_eq(class_of("93.184.216.34"), FETCH_ADDR_PUBLIC);
	cr_assert_eq(class_of("2606:2800:220:1::"), FETCH_ADDR_PUBLIC);
}

Test(outbound, a_url_as_messages_show_it)
{
	char b[FETCH_SHOWN_MAX];

	fetch_url_shown("https://u:pw@h.example:8443/a/b.csv?X-Amz-Signature="
			"x#frag", b, sizeof b);
	cr_assert_str_eq(b, "https://h.example:8443/a/b.csv?...");
	fetch_url_shown("s3://bkt/k/x.svm", b, sizeof b);
	cr_assert_str_eq(b, "s3://bkt/k/x.svm");
	fetch_url_shown("https://a@b@h/x#y", b, sizeof b);
	cr_assert_str_eq(b, "https://h/x");
	fetch_url_shown("/data/x\n.csv", b, sizeof b);
	cr_assert_str_eq(b, "/data/x\\n.csv");
}
