/* test_jobs_data.c -- a proteusd job on the user's own data
 * (trainer.data): it runs to its end on a LIBSVM set named by paths
 * relative to the job file (proteusctl submit makes them absolute), and
 * bad data is refused at submit with file:line, nothing stored and no
 * process started. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(jobs_data, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);

/* tmp/name: n rows of 2 classes (labels -1, +1) that feature 1 or 2
 * separates, in LIBSVM; then the text of tail. */
static void svm(const char *name, int n, const char *tail)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", jt.tmp, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < n; i++) {
		int c = i % 2;
		double jit = (double)((i * 37) % 100) / 100.0;

		fprintf(f, "%s %d:%.2f 3:%.2f\n", c ? "+1" : "-1", c + 1,
			1.0 + jit, jit);
	}
	fputs(tail, f);
	fclose(f);
}

static const char *const job_data =
	"{\"trainer\": {\"model\": \"mlr\", \"epochs\": 5, \"batch\": 32, "
	"\"data\": {\"train\": \"train.svm\", \"test\": \"%s\", "
	"\"scale\": \"standard\"}}}";

Test(jobs_data, a_job_on_its_own_data_runs_to_its_end)
{
	char extra[512];
	int64_t id;
	json_t *st;

	svm("train.svm", 2000, "");
	svm("test.svm", 400, "");
	daemon_up();
	snprintf(extra, sizeof extra, job_data, "test.svm");
	write_job(1, extra);
	id = submit();
	st = wait_end(id, 180);
	cr_assert_str_eq(state_of(st), "done", "%s",
			 json_string_value(json_object_get(st, "error")));
	cr_assert_gt(json_number_value(json_object_get(st, "test_accuracy")),
		     0.95);
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
}

Test(jobs_data, bad_data_is_refused_at_submit)
{
	char extra[512], want[800];
	struct pxrun r;

	svm("train.svm", 200, "");
	svm("bad.svm", 3, "1 2:1 1:1\n");
	daemon_up();
	snprintf(extra, sizeof extra, job_data, "bad.svm");
	write_job(1, extra);
	cr_assert_eq(ctl(&r, 20, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	snprintf(want, sizeof want, "trainer.data: %s/bad.svm:4: field 3: "
		 "index 1 after 2", jt.tmp);
	cr_assert(strstr(r.err, want), "want '%s' in %s", want, r.err);
	pxrun_free(&r);
	/* a test label the training set lacks: the same */
	svm("bad.svm", 3, "7 1:1\n");
	cr_assert_eq(ctl(&r, 20, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	cr_assert(strstr(r.err, "bad.svm:4: label 7 is not one of the "
			 "training set's 2"), "%s", r.err);
	pxrun_free(&r);
	/* a file that is not there: proteusctl says so */
	snprintf(extra, sizeof extra, job_data, "nothere.svm");
	write_job(1, extra);
	cr_assert_neq(ctl(&r, 20, "submit", jt.job, NULL, NULL), 0);
	cr_assert(strstr(r.err, "nothere.svm"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(processes_after(200), 0, "a trainer was started");
	stop_daemon(SIGTERM);
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
}

static const char *const job_url =
	"{\"trainer\": {\"model\": \"mlr\", \"epochs\": 1, \"batch\": 32, "
	"\"data\": {\"train\": \"%s\", \"test\": \"test.svm\", "
	"\"train_sha256\": \"%064d\"}}}";

/* Data URLs the trainer cannot fetch or the operator does not allow are
 * refused at submit, exit 3, naming the field, nothing stored, no
 * process started; no message shows a URL's query. */
Test(jobs_data, data_urls_are_refused_at_submit)
{
	const struct {
		const char *url, *says;
	} bad[] = {
		{ "ftp://127.0.0.1/train.svm", "trainer.data.train: "
		  "'ftp://127.0.0.1/train.svm': unsupported scheme" },
		{ "s3://proteus-data/train.svm", "trainer.data.train: "
		  "s3://proteus-data/train.svm: s3:// data is fetched with "
		  "this daemon's AWS credentials, and data_s3_allowed is no" },
		{ "http://192.0.2.7/train.svm?X-Amz-Signature=s3cr3t",
		  "trainer.data.train: http://192.0.2.7/train.svm?...: "
		  "http:// only to this host" },
		{ "https://127.0.0.1:9/train.svm?X-Amz-Signature=s3cr3t",
		  "trainer.data.train: https://127.0.0.1:9/train.svm?...: "
		  "https://127.0.0.1:9 is not allowed by data_url_allow" },
		{ "https://169.254.169.254/train.svm?X-Amz-Signature=s3cr3t",
		  "trainer.data.train: https://169.254.169.254/train.svm?...:"
		  " 169.254.169.254 is a link-local" },
		{ "https://u:s3cr3t@127.0.0.1:8443/train.svm",
		  "trainer.data.train: https://127.0.0.1:8443/train.svm: the "
		  "URL holds a user or password" },
		{ "https://127.0.0.1:8443/train?X-Amz-Signature=s3cr3t.svm",
		  "'https://127.0.0.1:8443/train': cannot tell its format" },
	};
	char extra[1024], *log;
	struct pxrun r;

	svm("test.svm", 100, "");
	daemon_up_with("data_url_allow https://127.0.0.1:8443, https://*\n");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(extra, sizeof extra, job_url, bad[i].url, 0);
		write_job(1, extra);
		cr_assert_eq(ctl(&r, 20, "submit", jt.job, NULL, NULL), 3,
			     "%s: %s", bad[i].url, r.err);
		cr_assert(strstr(r.err, bad[i].says), "%s: %s", bad[i].url,
			  r.err);
		cr_assert_null(strstr(r.err, "s3cr3t"), "%s", r.err);
		pxrun_free(&r);
	}
	cr_assert_eq(processes_after(200), 0, "a trainer was started");
	log = daemon_log();
	cr_assert_null(strstr(log, "s3cr3t"), "%s", log);
	free(log);
	stop_daemon(SIGTERM);
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
}

/* A peer that takes the connection and never answers (no TLS handshake
 * ever comes): the fetch times out, and the job fails with the reason,
 * naming the URL without its query, not as a stall. */
Test(jobs_data, a_peer_that_never_answers_fails_the_job_with_the_reason)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	char extra[1024], conf[128], url[128], want[160];
	const char *why;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int64_t id;
	int seen_env = 0;
	json_t *st;

	/* listening, never accepting: the kernel completes the connection
	 * and nothing ever answers on it */
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(fd, 64), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	snprintf(url, sizeof url, "https://127.0.0.1:%d/train.svm?"
		 "X-Amz-Signature=s3cr3t", ntohs(a.sin_port));
	svm("test.svm", 100, "");
	snprintf(conf, sizeof conf, "data_url_allow https://127.0.0.1:%d\n",
		 ntohs(a.sin_port));
	daemon_up_with(conf);
	snprintf(extra, sizeof extra, job_url, url, 0);
	write_job(1, extra);
	id = submit();
	/* while its roles try: the presigned URL is in no process's argv
	 * (any local user reads those), only in their environment */
	for (int i = 0; i < 1200 && !seen_env; i++) {
		cr_assert_eq(each_argv("s3cr3t", NULL, NULL, NULL), 0,
			     "the URL's signature in an argv");
		seen_env = each_argv("env:PX_TRAIN_DATA", NULL, NULL, NULL);
		sleep_ms(25);
	}
	cr_assert_gt(seen_env, 0, "no role was given its URL by the "
		     "environment");
	st = wait_end(id, 120);
	why = json_string_value(json_object_get(st, "error"));
	cr_assert_str_eq(state_of(st), "failed", "%s", daemon_said());
	{
		char *lg = daemon_log();

		cr_assert(lg && !strstr(lg, "s3cr3t"), "in the daemon's log");
		free(lg);
	}
	snprintf(want, sizeof want, "https://127.0.0.1:%d/train.svm?...: ",
		 ntohs(a.sin_port));
	cr_assert(why && strstr(why, want), "%s", why);
	cr_assert(strstr(why, "timeout") || strstr(why, "timed out"), "%s",
		  why);
	cr_assert_null(strstr(why, "stalled"), "%s", why);
	cr_assert_null(strstr(why, "s3cr3t"), "%s", why);
	cr_assert_eq(trainer_log_count(id, "s3cr3t"), 0);
	json_decref(st);
	close(fd);
}
