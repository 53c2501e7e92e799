/* test_trainer_cuda.c -- CUDA is loaded only when `--device cuda` asks
 * for it (trainer/compute/kern_load.c): a CPU run or --help maps no libcublas or
 * libcudart (the dynamic loader's own LD_DEBUG=libs log says what it
 * loaded), and `--device cuda` without the library, or without a GPU,
 * fails at once with exit 1 and an error naming what was tried.  Runs on
 * any machine: with a GPU, `--device cuda` must then work instead. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../trainer/compute/kern_cuda.h"
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

TestSuite(trainer_cuda, .init = setup, .fini = teardown, .timeout = 60);

#define SMALL_TRAIN "--model", "mlr", "--epochs", "1", "--max-train", \
	"500", "--max-test", "100", "--threads", "1", "--json"

/* Whether the loader's log shows a library of that name being loaded. */
static bool loaded(const char *ld_debug, const char *lib)
{
	char pat[128];

	snprintf(pat, sizeof(pat), "find library=%s", lib);
	return strstr(ld_debug, pat) != NULL;
}

/* pxrun with the dynamic loader's log of what it loads on stderr. */
static void run_traced(struct pxrun *r, int timeout_s, const char **argv)
{
	setenv("LD_DEBUG", "libs", 1);
	cr_assert_eq(pxrun(r, timeout_s, "proteus-trainer", argv), 0);
	unsetenv("LD_DEBUG");
}

static void assert_no_cuda_loaded(const struct pxrun *r)
{
	/* the log is there: the program's own libraries are in it */
	cr_assert(loaded(r->err, "libopenblas"), "no LD_DEBUG log:\n%s",
		  r->err);
	cr_assert(!loaded(r->err, "libcublas"), "libcublas loaded");
	cr_assert(!loaded(r->err, "libcudart"), "libcudart loaded");
	cr_assert(!strstr(r->err, KERN_CUDA_LIB), KERN_CUDA_LIB " loaded");
}

Test(trainer_cuda, help_loads_no_cuda)
{
	const char *argv[] = { "proteus-trainer", "--help", NULL };
	const char *train[] = { "proteus-trainer", "train", "--help", NULL };
	struct pxrun r;

	run_traced(&r, 30, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "train"), "%s", r.out);
	assert_no_cuda_loaded(&r);
	pxrun_free(&r);
	run_traced(&r, 30, train);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "--device"), "%s", r.out);
	assert_no_cuda_loaded(&r);
	pxrun_free(&r);
}

Test(trainer_cuda, cpu_train_loads_no_cuda)
{
	const char *argv[] = { "proteus-trainer", "train", "--device", "cpu",
			       SMALL_TRAIN, NULL };
	struct pxrun r;

	run_traced(&r, 60, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "\"test_accuracy\""), "%s", r.out);
	assert_no_cuda_loaded(&r);
	pxrun_free(&r);
}

/* A CPU job's roles (coordinator, PS, workers: each a fresh process of
 * the program) load no CUDA either: LD_DEBUG goes down to them. */
Test(trainer_cuda, cpu_local_roles_load_no_cuda)
{
	const char *argv[] = { "proteus-trainer", "local", "--workers", "1",
			       "--ps", "1", SMALL_TRAIN, NULL };
	struct pxrun r;

	run_traced(&r, 60, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_no_cuda_loaded(&r);
	pxrun_free(&r);
}

#ifdef PX_HAVE_CUDA

/* PROTEUS_CUDA_LIB names a file that is not there: exit 1 at once, the
 * error naming it, for `train` and for `local` (which otherwise waited
 * forever for a worker that had died at its start). */
Test(trainer_cuda, missing_library_fails_naming_it)
{
	const char *train[] = { "proteus-trainer", "train", "--device", "cuda",
				SMALL_TRAIN, NULL };
	const char *local[] = { "proteus-trainer", "local", "--device", "cuda",
				"--workers", "1", "--ps", "1", SMALL_TRAIN,
				NULL };
	char lib[600];
	struct pxrun r;

	snprintf(lib, sizeof(lib), "%s/nonexistent.so", tmp);
	setenv("PROTEUS_CUDA_LIB", lib, 1);
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", train), 0);
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, lib), "%s", r.err);
	cr_assert(strstr(r.err, "cannot load the CUDA library"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", local), 0);
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, lib), "%s", r.err);
	pxrun_free(&r);
}

/* A shared object that is not ours (zlib) is refused, the error naming
 * the entry point it lacks. */
Test(trainer_cuda, not_the_library_is_refused)
{
	const char *argv[] = { "proteus-trainer", "train", "--device", "cuda",
			       SMALL_TRAIN, NULL };
	struct pxrun r;

	/* a real shared object without our entry point */
	setenv("PROTEUS_CUDA_LIB", "libz.so.1", 1);
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, KERN_CUDA_ENTRY), "%s", r.err);
	pxrun_free(&r);
}

/* The library built here, loaded from beside the program: without a GPU
 * a clear "no CUDA device" and exit 1 (and then cuBLAS was loaded, which
 * shows the LD_DEBUG checks above would see it); with one, training. */
Test(trainer_cuda, built_library_without_gpu_says_no_device)
{
	const char *argv[] = { "proteus-trainer", "train", "--device", "cuda",
			       SMALL_TRAIN, NULL };
	struct pxrun r;
	int n;

	unsetenv("PROTEUS_CUDA_LIB");
	n = kern_cuda_device_count(NULL);
	run_traced(&r, 60, argv);
	cr_assert(loaded(r.err, "libcublas"), "cuBLAS not loaded:\n%s",
		  r.err);
	if (n > 0) {
		cr_assert_eq(r.status, 0, "%s", r.err);
	} else {
		cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.err);
		cr_assert(strstr(r.err, "error: training failed: no CUDA "
				 "device ("), "%s", r.err);
	}
	pxrun_free(&r);
}

/* Copied as `make install` lays it out (bin/ and lib/proteus/), the
 * program finds the library from its own place; without it, the error
 * lists every place looked at. */
Test(trainer_cuda, installed_layout_finds_the_library)
{
	const char *argv[] = { "", "train", "--device", "cuda", SMALL_TRAIN,
			       NULL };
	char cmd[4096], bin[700], prog[800];
	const char *build = getenv("PX_BUILD");
	struct pxrun r;

	unsetenv("PROTEUS_CUDA_LIB");
	snprintf(bin, sizeof(bin), "%s/bin", tmp);
	snprintf(prog, sizeof(prog), "%s/proteus-trainer", bin);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' '%s/lib/proteus' && "
		 "cp '%s/proteus-trainer' '%s/'", bin, tmp,
		 build ? build : "build", bin);
	cr_assert_eq(system(cmd), 0);
	/* pxrun runs $PX_BUILD/<prog> */
	setenv("PX_BUILD", bin, 1);
	argv[0] = prog;
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	if (access(PX_CUDA_LIBDIR "/" KERN_CUDA_LIB, F_OK) != 0) {
		cr_assert_eq(r.status, 1, "%s", r.err);
		cr_assert(strstr(r.err, "cannot load the CUDA library"), "%s",
			  r.err);
		cr_assert(strstr(r.err, bin), "%s", r.err);
		cr_assert(strstr(r.err, "/../lib/proteus/" KERN_CUDA_LIB),
			  "%s", r.err);
		cr_assert(strstr(r.err, PX_CUDA_LIBDIR), "%s", r.err);
	}
	pxrun_free(&r);
	snprintf(cmd, sizeof(cmd), "cp '%s/" KERN_CUDA_LIB "' "
		 "'%s/lib/proteus/'", build ? build : "build", tmp);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert(!strstr(r.err, "cannot load"), "%s", r.err);
	if (kern_cuda_device_count(NULL) <= 0)
		cr_assert(strstr(r.err, "no CUDA device"), "%s", r.err);
	else
		cr_assert_eq(r.status, 0, "%s", r.err);
	pxrun_free(&r);
}

#else /* !PX_HAVE_CUDA */

Test(trainer_cuda, cuda_says_not_built)
{
	const char *argv[] = { "proteus-trainer", "train", "--device", "cuda",
			       SMALL_TRAIN, NULL };
	struct pxrun r;

	setenv("PROTEUS_CUDA_LIB", "/nonexistent.so", 1);
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 1, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "CUDA support was not built"), "%s", r.err);
	pxrun_free(&r);
}

#endif
