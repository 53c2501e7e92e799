/* test_trainer_cli.c -- `proteus-trainer train` with checkpoints: killed
 * after an epoch and resumed, the run ends bit for bit where the same run
 * straight through ends (one thread, CPU: the order of every operation is
 * the same), and `eval` of its last checkpoint agrees. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* proteus-trainer ARGV (NULL-terminated, without argv[0]) into *r; its
 * exit status. */
static int run(struct pxrun *r, const char *const *args)
{
	const char *argv[48] = { "proteus-trainer" };
	size_t n = 1;

	for (size_t i = 0; args[i] && n < 47; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 90, "proteus-trainer", argv), 0, "spawn");
	return r->status;
}

#define DIVERGING "--model", "mlp", "--lr", "1e6", "--epochs", "2", \
	"--max-train", "2000", "--max-test", "500", "--threads", "1"

/* A run that diverges (--lr 1e6: the loss is NaN within the first
 * epoch) fails, in train and in local alike: exit 1, a message saying it
 * diverged, where and at which --lr; no result printed (no JSON with a
 * null or a NaN for the loss, no "nan" in the text), and no checkpoint of
 * the diverged state written. */
Test(trainer_cli, diverged_run_fails)
{
	char ck[600];
	const char *train_json[] = { "train", DIVERGING, "--json",
				     "--checkpoint", ck, NULL };
	const char *train_text[] = { "train", DIVERGING, NULL };
	/* checkpoints after each evaluation (0): the evaluation that finds
	 * the divergence must not write one (every 1 clock wrote one of the
	 * first clock now and then, its numbers still finite) */
	const char *local_json[] = { "local", DIVERGING, "--json",
				     "--checkpoint", ck, "--checkpoint-every",
				     "0", NULL };
	const char *local_eval[] = { "local", DIVERGING, "--eval-epochs",
				     NULL };
	struct pxrun r;

	snprintf(ck, sizeof(ck), "%s/d.pxc", tmp);
	cr_assert_eq(run(&r, train_json), 1, "status %d: %s", r.status,
		     r.err);
	cr_assert_not_null(strstr(r.err, "training failed: the run diverged "
				  "at epoch 1, step "), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "the training loss is not a number "
				  "(--lr 1e+06)"), "%s", r.err);
	cr_assert_str_empty(r.out);
	cr_assert_neq(access(ck, F_OK), 0, "a diverged checkpoint written");
	pxrun_free(&r);

	cr_assert_eq(run(&r, train_text), 1, "status %d: %s", r.status,
		     r.err);
	cr_assert_null(strstr(r.out, "nan"), "%s", r.out);
	cr_assert_null(strstr(r.err, "nan"), "%s", r.err);
	pxrun_free(&r);

	cr_assert_eq(run(&r, local_json), 1, "status %d: %s", r.status,
		     r.err);
	cr_assert_not_null(strstr(r.err, "the run diverged at clock "), "%s",
			   r.err);
	cr_assert_not_null(strstr(r.err, "the test loss is not a number "
				  "(--lr 1e+06)"), "%s", r.err);
	cr_assert_str_empty(r.out);
	cr_assert_neq(access(ck, F_OK), 0, "a diverged checkpoint written");
	pxrun_free(&r);

	/* evaluated after each epoch: it fails at the first's end, not
	 * after the second */
	cr_assert_eq(run(&r, local_eval), 1, "status %d: %s", r.status,
		     r.err);
	cr_assert_not_null(strstr(r.err, "the run diverged at clock "), "%s",
			   r.err);
	cr_assert_null(strstr(r.out, "nan"), "%s", r.out);
	cr_assert_null(strstr(r.err, "test loss nan"), "%s", r.err);
	pxrun_free(&r);
}

/* A checkpoint holding a number that is not finite (a diverged run's,
 * written by an older trainer) is bad input: eval and --resume refuse it,
 * exit 3, naming the number. */
Test(trainer_cli, checkpoint_not_finite_refused)
{
	char ck[600];
	const char *write[] = { "train", "--model", "mlr", "--epochs", "2",
				"--max-train", "600", "--max-test", "100",
				"--threads", "1", "--checkpoint", ck,
				"--fault-crash-after", "1", NULL };
	const char *eval[] = { "eval", ck, "--max-test", "100", NULL };
	const char *resume[] = { "train", "--model", "mlr", "--epochs", "2",
				 "--max-train", "600", "--max-test", "100",
				 "--threads", "1", "--resume", ck, NULL };
	static const unsigned char nan_le[4] = { 0, 0, 0xc0, 0x7f };
	unsigned char digest[32];
	struct pxrun r;
	size_t len;
	char *buf, *nl;
	FILE *f;

	snprintf(ck, sizeof(ck), "%s/n.pxc", tmp);
	cr_assert_eq(run(&r, write), 128 + 9, "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(run(&r, eval), 0, "%s", r.err);
	pxrun_free(&r);
	/* the second parameter NaN, the SHA-256 made anew */
	f = fopen(ck, "r+b");
	cr_assert_not_null(f);
	buf = malloc(1 << 20);
	cr_assert_not_null(buf);
	len = fread(buf, 1, 1 << 20, f);
	cr_assert_gt(len, 100);
	nl = memchr(buf, '\n', len);
	cr_assert_not_null(nl);
	memcpy(nl + 1 + 4, nan_le, 4);
	cr_assert_eq(EVP_Digest(buf, len - 32, digest, NULL, EVP_sha256(),
				NULL), 1);
	memcpy(buf + len - 32, digest, 32);
	rewind(f);
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(buf);

	cr_assert_eq(run(&r, eval), 3, "status %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "parameter 2 of 7850 is not a finite "
				  "number"), "%s", r.err);
	cr_assert_str_empty(r.out);
	pxrun_free(&r);
	cr_assert_eq(run(&r, resume), 3, "status %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "not a finite number"), "%s", r.err);
	pxrun_free(&r);
}
