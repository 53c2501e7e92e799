/* test_trainer_cli.c -- `proteus-trainer train` with checkpoints: killed
 * after an epoch and resumed, the run ends bit for bit where the same run
 * straight through ends (one thread, CPU: the order of every operation is
 * the same), and `eval` of its last checkpoint agrees. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxrun.h"

static char *tmp;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(trainer_cli, .init = setup, .fini = teardown, .timeout = 60);

/* `proteus-trainer train` (MLP, 4 epochs on 6000 examples) plus extra;
 * its exit status, and its JSON in *ret when it printed one. */
static int train(const char *const *extra, json_t **ret, struct pxrun *r)
{
	const char *argv[32] = {
		"proteus-trainer", "train", "--model", "mlp", "--epochs", "4",
		"--max-train", "6000", "--max-test", "1000", "--threads", "1",
		"--schedule", "cosine", "--json",
	};
	size_t n = 15;

	for (size_t i = 0; extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 60, "proteus-trainer", argv), 0);
	*ret = r->status == 0 ? json_loads(r->out, 0, NULL) : NULL;
	return r->status;
}

static double num(json_t *j, const char *k)
{
	json_t *v = json_object_get(j, k);

	cr_assert(json_is_number(v), "no number '%s'", k);
	return json_number_value(v);
}

Test(trainer_cli, train_resumed_ends_where_straight_run_ends)
{
	char ck[600], fin[600];
	const char *none[] = { NULL };
	const char *crash[] = { "--checkpoint", ck, "--fault-crash-after",
				"2", NULL };
	const char *resume[] = { "--resume", ck, "--checkpoint", fin, NULL };
	json_t *whole, *res, *ev;
	struct pxrun r;

	snprintf(ck, sizeof(ck), "%s/train.pxc", tmp);
	snprintf(fin, sizeof(fin), "%s/final.pxc", tmp);
	cr_assert_eq(train(none, &whole, &r), 0, "%s", r.err);
	cr_assert_not_null(whole);
	pxrun_free(&r);
	cr_assert_eq(train(crash, &res, &r), 128 + 9, "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(train(resume, &res, &r), 0, "%s", r.err);
	cr_assert_not_null(res, "%s", r.out);
	cr_assert_eq(num(res, "resumed_from"), 2);
	cr_assert_eq(num(res, "epochs"), 4);
	/* bit for bit: exactly the same loss and accuracy */
	cr_assert(num(res, "test_loss") == num(whole, "test_loss"),
		  "resumed %.17g, straight %.17g", num(res, "test_loss"),
		  num(whole, "test_loss"));
	cr_assert(num(res, "test_accuracy") == num(whole, "test_accuracy"));
	pxrun_free(&r);
	/* eval of the resumed run's last checkpoint: the same numbers */
	{
		const char *argv[] = { "proteus-trainer", "eval", fin,
				       "--max-test", "1000", "--threads", "1",
				       "--json", NULL };

		cr_assert_eq(pxrun(&r, 60, "proteus-trainer", argv), 0);
		cr_assert_eq(r.status, 0, "%s", r.err);
		ev = json_loads(r.out, 0, NULL);
		cr_assert_not_null(ev, "%s", r.out);
		/* `eval` and `train` evaluate through one function
		 * (train_eval_host) at one batch and, here, one BLAS thread:
		 * the same kernel on the same machine gives the same float32
		 * sums, whatever the CPU.  (Before, `train` evaluated at its
		 * training batch, so OpenBLAS blocked the sums differently and
		 * the two disagreed by ~2e-9 on AMD EPYC.) */
		cr_assert(num(ev, "test_loss") == num(whole, "test_loss"),
			  "eval %.17g, train %.17g", num(ev, "test_loss"),
			  num(whole, "test_loss"));
		cr_assert(num(ev, "test_accuracy") ==
			  num(whole, "test_accuracy"));
		cr_assert_eq(num(ev, "workers"), 1);
		json_decref(ev);
		pxrun_free(&r);
	}
	json_decref(whole);
	json_decref(res);
}

/* A checkpoint of another shape (here: 3 epochs, not 4) is refused with
 * the field, exit 3 (bad input data); a finished run's final one too. */
Test(trainer_cli, train_resume_refuses_other_shape)
{
	char ck[600];
	const char *three[] = { "--epochs", "3", "--checkpoint", ck, NULL };
	const char *resume[] = { "--resume", ck, NULL };
	const char *again[] = { "--epochs", "3", "--resume", ck, NULL };
	json_t *j;
	struct pxrun r;

	snprintf(ck, sizeof(ck), "%s/three.pxc", tmp);
	cr_assert_eq(train(three, &j, &r), 0, "%s", r.err);
	json_decref(j);
	pxrun_free(&r);
	cr_assert_eq(train(resume, &j, &r), 3);
	cr_assert_not_null(strstr(r.err, "3 epochs (--epochs), this one has "
				  "4"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(train(again, &j, &r), 3);
	cr_assert_not_null(strstr(r.err, "finished job"), "%s", r.err);
	pxrun_free(&r);
}
