/* test_job_scaling.c -- the measured scaling a job keeps in the store ("scaling" events) and a
 * restarted daemon takes up again (agent/jobs_progress.c): the goodput,
 * its two factors, and whether exploring ended. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "../../agent/jobs_int.h"
#include "../../trainer/dist/wire.h"

static struct job *blank_job(void)
{
	struct job *j = calloc(1, sizeof *j);

	cr_assert_not_null(j);
	return j;
}

/* What one life wrote the next takes whole: the counts, their goodput,
 * reports and factors, and an exploration that ended stays ended. */
Test(job_scaling, the_stored_measurements_come_back_whole)
{
	struct job *a = blank_job(), *b = blank_job();
	json_t *o;
	char *s;

	for (int i = 0; i < JOBSPEC_MEASURED_MIN; i++) {
		jobspec_measured_add(&a->pg.meas, 1, 900);
		jobspec_measured_add_parts(&a->pg.meas, 1, 1000, 64);
		jobspec_measured_add(&a->pg.meas, 4, 2000);
		jobspec_measured_add_parts(&a->pg.meas, 4, 4000, 256);
	}
	jobspec_measured_add(&a->pg.meas, 2, 1500);  /* no factors */
	a->pg.explore.done = true;
	o = job_scaling_json(a);
	cr_assert_not_null(o);
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	o = json_loads(s, 0, NULL);  /* as the store gives it back */
	cr_assert_not_null(o, "%s", s);
	job_scaling_take(b, o);
	for (int n = 1; n <= 4; n++) {
		cr_assert_eq(b->pg.meas.reports[n], a->pg.meas.reports[n], "%d", n);
		cr_assert_float_eq(b->pg.meas.goodput[n], a->pg.meas.goodput[n],
				   1e-9, "%d", n);
		cr_assert_eq(b->pg.meas.parts[n], a->pg.meas.parts[n], "%d", n);
		cr_assert_float_eq(b->pg.meas.throughput[n],
				   a->pg.meas.throughput[n], 1e-9, "%d", n);
		cr_assert_float_eq(b->pg.meas.batch[n], a->pg.meas.batch[n], 1e-9,
				   "%d", n);
	}
	cr_assert_eq(b->pg.meas.parts[2], 0);
	cr_assert(b->pg.explore.done, "%s", s);
	json_decref(o);
	free(s);
	free(a);
	free(b);
}

/* An event written before the factors (and the end of exploring) were
 * kept: taken as it is; bad entries are skipped, not taken. */
Test(job_scaling, an_older_or_bad_event_is_taken_as_far_as_it_goes)
{
	struct job *b = blank_job();
	json_t *o = json_loads("{\"measured\": true, \"instances\": [1, 7, 0, "
			       "9], \"goodput\": [1000, 1000, 5, -3], "
			       "\"reports\": [20, 20, 3, 4], \"throughput\": "
			       "[1, \"x\"], \"total_batch\": [64], \"parts\": "
			       "[0]}", 0, NULL);

	cr_assert_not_null(o);
	job_scaling_take(b, o);
	cr_assert_eq(b->pg.meas.reports[1], 20);
	cr_assert_eq(b->pg.meas.reports[7], 20);
	cr_assert_float_eq(b->pg.meas.goodput[7], 1000, 1e-9);
	cr_assert_eq(b->pg.meas.reports[9], 0, "a goodput below 0 is skipped");
	for (int n = 0; n <= JOBSPEC_MEASURED_MAX; n++)
		cr_assert_eq(b->pg.meas.parts[n], 0, "%d", n);
	cr_assert_not(b->pg.explore.done);
	json_decref(o);
	free(b);
}

/* PROGRESS reports of 3 instances with a worker each, as the trainer
 * workload reports them to the job (trainer_goodput_report, then
 * job_progress_take), until the count's throughput and total batch are
 * taken; the total batch returned. */
static double total_batch_taken(uint8_t stage)
{
	struct job *j = blank_job();
	struct wire_member m[3] = {
		/* the reliable node: worker and BackupPS in stage 3 */
		{ .node = { 1 }, .state = WIRE_MEMBER_ACTIVE,
		  .roles = WIRE_ROLE_WORKER | WIRE_ROLE_PS_BACKUP },
		{ .node = { 2 }, .state = WIRE_MEMBER_ACTIVE,
		  .roles = WIRE_ROLE_WORKER | WIRE_ROLE_PS_ACTIVE },
		{ .node = { 3 }, .state = WIRE_MEMBER_ACTIVE,
		  .roles = WIRE_ROLE_WORKER | WIRE_ROLE_PS_ACTIVE },
	};
	struct wire_progress p = {
		.clock = 10, .stage = stage, .goodput = 900,
		.efficiency = 0.9f, .noise_scale = 1000, .batch = 64,
		.lr_scale = 1, .n = 3, .members = m,
	};
	double b;
	int k;

	j->req.trainer.batch = 64;
	j->req.trainer.workers_per_instance = 1;
	job_progress_init(j);
	for (k = 0; k < 20 && !j->pg.meas.parts[3]; k++) {
		struct job_report r = { .clock = 10, .stage = stage,
					.workers = 3, .acc = NAN, .loss = NAN };

		trainer_goodput_report(j, &p, r.workers, &r);
		cr_assert_eq(r.instances, 3);
		job_progress_take(j, &r);
	}
	cr_assert_eq(j->pg.meas.parts[3], 1, "taken once steady (%d reports)",
		     k);
	cr_assert_float_eq(j->pg.meas.throughput[3], 1000, 1e-3);
	b = j->pg.meas.batch[3];
	free(j);
	return b;
}

/* The total batch a count is valued at is that of the workers that train:
 * in stage 3 the reliable node's worker idles (it holds the BackupPS),
 * so 3 instances train 2 x 64 examples a minibatch, not 3 x 64. */
Test(job_scaling, stage_3s_idle_reliable_worker_adds_no_batch)
{
	cr_assert_float_eq(total_batch_taken(2), 3 * 64, 1e-9);
	cr_assert_float_eq(total_batch_taken(3), 2 * 64, 1e-9);
}
