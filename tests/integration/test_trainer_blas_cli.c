/* test_trainer_blas_cli.c -- the OpenBLAS kernels proteus-trainer runs on, as
 * its --json and its roles' logs report them: an OPENBLAS_CORETYPE set by
 * the operator wins; a library choice below the CPU's tier is raised by
 * running the program again (the library's choice is made Prescott, the
 * issue's Xeon case, with the PX_BLAS_TEST_LIBRARY hook, so that the raise
 * happens on any machine with AVX), and the raised kernels are the ones
 * OpenBLAS reports; kernels that fail the reference check
 * (PX_BLAS_TEST_BAD_CORE) are given up for the library's own, or refused
 * with exit 1 when there is nothing to fall back to. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../trainer/compute/blas_pick.h"
#include "pxrun.h"

static char *tmp;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	/* what the test was started with must not decide */
	unsetenv("OPENBLAS_CORETYPE");
	unsetenv(BLAS_PICK_ENV);
	unsetenv("PX_BLAS_TEST_LIBRARY");
	unsetenv("PX_BLAS_TEST_BAD_CORE");
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(trainer_blas_cli, .init = setup, .fini = teardown, .timeout = 60);

/* `train` of the MLP on 1000 examples, 1 epoch: its exit status, its
 * output in *r, and its "blas" object in *ret (NULL when it failed). */
static int train(const char *const *extra, json_t **ret, struct pxrun *r)
{
	const char *argv[32] = {
		"proteus-trainer", "train", "--model", "mlp", "--epochs", "1",
		"--max-train", "1000", "--max-test", "200", "--threads", "1",
		"--json",
	};
	size_t n = 13;
	json_t *j;

	for (size_t i = 0; extra && extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 60, "proteus-trainer", argv), 0);
	*ret = NULL;
	if (r->status != 0)
		return r->status;
	j = json_loads(r->out, 0, NULL);
	cr_assert_not_null(j, "%s", r->out);
	*ret = json_incref(json_object_get(j, "blas"));
	json_decref(j);
	cr_assert(json_is_object(*ret), "no blas object: %s", r->out);
	return 0;
}

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void expect_str(json_t *o, const char *k, const char *want)
{
	const char *got = str(o, k);

	if (!want)
		cr_assert_null(got, "%s: null expected, got %s", k, got);
	else
		cr_assert(got && !strcmp(got, want), "%s: %s expected, got %s",
			  k, want, got ? got : "null");
}

/* What the trainer raises Prescott to on this CPU; NULL: nothing (an
 * SSE-only CPU). */
static const char *raised(void)
{
	struct blas_cpu c;

	blas_cpu_detect(&c);
	return blas_pick_core("Prescott", &c);
}

/* Make the library's choice Prescott (the hook), for a test of the
 * raise: what it is raised to, or the test skipped on an SSE-only CPU. */
static const char *pretend_prescott(void)
{
	const char *want = raised();

	if (!want)
		cr_skip_test("an SSE-only CPU: nothing to raise to");
	setenv("PX_BLAS_TEST_LIBRARY", "Prescott", 1);
	return want;
}

Test(trainer_blas_cli, operator_coretype_wins)
{
	json_t *b;
	struct pxrun r;

	/* a raise would happen without it */
	setenv("PX_BLAS_TEST_LIBRARY", "Prescott", 1);
	setenv("OPENBLAS_CORETYPE", "Sandybridge", 1);
	cr_assert_eq(train(NULL, &b, &r), 0, "%s", r.err);
	expect_str(b, "core", "Sandybridge");
	expect_str(b, "chosen", "environment");
	expect_str(b, "library_core", NULL);
	cr_assert_eq(json_integer_value(json_object_get(b, "threads")), 1);
	cr_assert(strstr(str(b, "library"), "OpenBLAS 0."), "%s",
		  str(b, "library"));
	json_decref(b);
	pxrun_free(&r);

	/* in any case, as OpenBLAS takes it */
	setenv("OPENBLAS_CORETYPE", "prescott", 1);
	cr_assert_eq(train(NULL, &b, &r), 0, "%s", r.err);
	expect_str(b, "core", "Prescott");
	expect_str(b, "chosen", "environment");
	json_decref(b);
	pxrun_free(&r);

	/* one OpenBLAS does not know: said, and what runs reported */
	setenv("OPENBLAS_CORETYPE", "NoSuchCore", 1);
	cr_assert_eq(train(NULL, &b, &r), 0, "%s", r.err);
	expect_str(b, "chosen", "environment");
	cr_assert_not_null(strstr(r.err, "OpenBLAS does not know "
				  "OPENBLAS_CORETYPE=NoSuchCore: it runs "),
			   "%s", r.err);
	json_decref(b);
	pxrun_free(&r);
}

/* The Xeon: the library says Prescott, the CPU can do more. */
Test(trainer_blas_cli, generic_core_raised_by_features)
{
	const char *want = pretend_prescott();
	json_t *b;
	struct pxrun r;

	cr_assert_eq(train(NULL, &b, &r), 0, "%s", r.err);
	/* reported by OpenBLAS itself after the exec */
	expect_str(b, "core", want);
	expect_str(b, "chosen", "cpu-features");
	expect_str(b, "library_core", "Prescott");
	expect_str(b, "rejected", NULL);
	cr_assert(json_real_value(json_object_get(b, "check_error")) < 3e-5);
	json_decref(b);
	pxrun_free(&r);
}

/* No hook, no variable: the library's own or a raise, never the
 * environment, and the check passed. */
Test(trainer_blas_cli, default_run)
{
	json_t *b;
	struct pxrun r;
	const char *how;

	cr_assert_eq(train(NULL, &b, &r), 0, "%s", r.err);
	how = str(b, "chosen");
	cr_assert(how && (!strcmp(how, "library") ||
			  !strcmp(how, "cpu-features")), "%s", how);
	cr_assert_not_null(str(b, "library_core"));
	json_decref(b);
	pxrun_free(&r);
}

/* The raised kernels fail the check: the library's own, said. */
Test(trainer_blas_cli, failed_raise_falls_back)
{
	const char *want = pretend_prescott();
	json_t *b;
	struct pxrun r;

	setenv("PX_BLAS_TEST_BAD_CORE", want, 1);
	cr_assert_eq(train(NULL, &b, &r), 0, "%s", r.err);
	expect_str(b, "chosen", "library");
	expect_str(b, "rejected", want);
	cr_assert(strcmp(str(b, "core"), want), "%s", str(b, "core"));
	json_decref(b);
	pxrun_free(&r);
}

/* The operator's kernels fail it: nothing safer to take, exit 1. */
Test(trainer_blas_cli, failed_operator_core_refused)
{
	json_t *b;
	struct pxrun r;

	setenv("OPENBLAS_CORETYPE", "Sandybridge", 1);
	setenv("PX_BLAS_TEST_BAD_CORE", "Sandybridge", 1);
	cr_assert_eq(train(NULL, &b, &r), 1, "%s", r.err);
	cr_assert_null(b);
	cr_assert_not_null(strstr(r.err, "Sandybridge kernels (environment) "
				  "fail the reference check, so the trainer "
				  "does not use them: sgemm "), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "set OPENBLAS_CORETYPE to a core "
				  "that passes"), "%s", r.err);
	cr_assert_eq(r.out[0], '\0', "%s", r.out);
	pxrun_free(&r);
}

/* eval --json too; a job's roles say theirs in their logs, each the
 * kernels the node chose (they inherit the choice, not run again). */
Test(trainer_blas_cli, eval_and_roles_report)
{
	char ck[600];
	const char *ckpt[] = { "--checkpoint", ck, NULL };
	const char *ev[] = { "proteus-trainer", "eval", ck, "--max-test",
			     "200", "--threads", "1", "--json", NULL };
	const char *loc[] = { "proteus-trainer", "local", "--model", "mlr",
			      "--epochs", "1", "--max-train", "1000",
			      "--max-test", "200", "--workers", "1", "--ps",
			      "1", "--threads", "1", "--timeout", "50",
			      "--dir", tmp, NULL };
	const char *want = pretend_prescott();
	char line[160];
	json_t *b, *j;
	struct pxrun r;

	snprintf(ck, sizeof(ck), "%s/m.pxc", tmp);
	cr_assert_eq(train(ckpt, &b, &r), 0, "%s", r.err);
	json_decref(b);
	pxrun_free(&r);
	cr_assert_eq(pxrun(&r, 60, "proteus-trainer", ev), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	b = json_object_get(j, "blas");
	expect_str(b, "core", want);
	expect_str(b, "chosen", "cpu-features");
	json_decref(j);
	pxrun_free(&r);

	cr_assert_eq(pxrun(&r, 60, "proteus-trainer", loc), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(line, sizeof(line), "kernels %s (cpu-features, the library "
		 "chose Prescott), 1 thread, within ", want);
	for (const char *role = "coordinator: notice: blas: OpenBLAS ";
	     role; role = role[0] == 'c' ? "worker: notice: blas: OpenBLAS "
				: role[0] == 'w' ? "ps: notice: blas: OpenBLAS "
						 : NULL) {
		const char *at = strstr(r.err, role);

		cr_assert_not_null(at, "no '%s' in %s", role, r.err);
		cr_assert_not_null(strstr(at, line), "%s", r.err);
	}
	pxrun_free(&r);
}
