/* test_jobs_data.c -- a proteusd job on the user's own data
 * (trainer.data): it runs to its end on a LIBSVM set named by paths
 * relative to the job file (proteusctl submit makes them absolute), and
 * bad data is refused at submit with file:line, nothing stored and no
 * process started. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
