/* test_check_tests.c -- scripts/check-tests, the test tree's rules (issue
 * 38, item 6): this tree passes; a tree with each kind of fault (two test
 * files of one name, a slurp of its own and a function that reads a
 * whole file, a fixture called inside a test, build output tracked in
 * git) fails, exit 1, with a file:line line for each; a clean one passes,
 * silent. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pxrun.h"

static char *tmp;
static char script[PATH_MAX];

static void setup(void)
{
	char *s = px_src_path("scripts/check-tests");

	cr_assert_not_null(realpath(s, script), "no %s", s);
	free(s);
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(check_tests, .init = setup, .fini = teardown, .timeout = 60);

/* text at <tmp>/rel, the folders on the way made. */
static void put(const char *rel, const char *text)
{
	cr_assert_eq(px_put_file(tmp, rel, text), 0, "%s/%s: %s", tmp, rel,
		     strerror(errno));
}

static int check(struct pxrun *r, const char *root)
{
	const char *argv[] = { "check-tests", root, NULL };

	cr_assert_eq(pxrun(r, 30, script, argv), 0, "cannot run %s", script);
	return r->status;
}

static const char good_test[] =
	"#include <criterion/criterion.h>\n"
	"static void mk(void) { }\n"
	"TestSuite(good, .init = mk);\n"
	"Test(good, one)\n"
	"{\n"
	"\tcr_assert(1); /* mk() in a comment is no call */\n"
	"}\n";

Test(check_tests, this_tree_passes)
{
	struct pxrun r;
	char *src = px_src_path("");

	cr_assert_eq(check(&r, src), 0, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out, "");
	pxrun_free(&r);
	free(src);
}

Test(check_tests, a_clean_tree_passes_silent)
{
	struct pxrun r;

	put("tests/unit/test_good.c", good_test);
	put("tests/integration/test_good_cli.c", good_test);
	cr_assert_eq(check(&r, tmp), 0, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out, "");
	pxrun_free(&r);
}

Test(check_tests, each_fault_named_with_its_line)
{
	struct pxrun r;

	put("tests/unit/test_twin.c", good_test);
	put("tests/integration/test_twin.c", good_test);
	put("tests/unit/test_reads.c",
	    "static char *slurp(const char *p)\n"
	    "{\n"
	    "\treturn 0;\n"
	    "}\n"
	    "\n"
	    "static char *load(FILE *f)\n"
	    "{\n"
	    "\tlong n;\n"
	    "\tchar *b;\n"
	    "\n"
	    "\tfseek(f, 0, SEEK_END);\n"
	    "\tn = ftell(f);\n"
	    "\tb = malloc(n + 1);\n"
	    "\tfread(b, 1, n, f);\n"
	    "\treturn b;\n"
	    "}\n");
	put("tests/unit/test_again.c",
	    "static void setup(void) { }\n"
	    "static void teardown(void) { }\n"
	    "TestSuite(again, .init = setup, .fini = teardown);\n"
	    "Test(again, twice)\n"
	    "{\n"
	    "\tif (1) {\n"
	    "\t\tteardown();\n"
	    "\t\tsetup();\n"
	    "\t}\n"
	    "}\n");
	cr_assert_eq(check(&r, tmp), 1, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "tests/integration/test_twin.c:1: test file "
			 "name test_twin.c also used by "
			 "tests/unit/test_twin.c\n"), "%s", r.out);
	cr_assert(strstr(r.out, "tests/unit/test_twin.c:1: test file name "
			 "test_twin.c also used by "
			 "tests/integration/test_twin.c\n"), "%s", r.out);
	cr_assert(strstr(r.out, "tests/unit/test_reads.c:1: slurp: a "
			 "whole-file reader; use px_test_read_file "
			 "(pxrun.h)\n"), "%s", r.out);
	cr_assert(strstr(r.out, "tests/unit/test_reads.c:6: load reads a "
			 "whole file; use px_test_read_file (pxrun.h)\n"),
		  "%s", r.out);
	cr_assert(strstr(r.out, "tests/unit/test_again.c:7: teardown() "
			 "called inside a test: it is a fixture "
			 "(.init/.fini)\n"), "%s", r.out);
	cr_assert(strstr(r.out, "tests/unit/test_again.c:8: setup() called "
			 "inside a test: it is a fixture (.init/.fini)\n"),
		  "%s", r.out);
	pxrun_free(&r);
}

Test(check_tests, tracked_build_output_named)
{
	const char *init[] = { "env", "git", "-C", tmp, "init", "-q", NULL };
	const char *add[] = { "env", "git", "-C", tmp, "add", "-A", NULL };
	struct pxrun r;

	put("tests/unit/test_good.c", good_test);
	put("tests/fake/__pycache__/fake.cpython-311.pyc", "bytecode");
	put("obj/x.o", "object");
	if (pxrun(&r, 30, "/usr/bin/env", init) != 0 || r.status != 0) {
		pxrun_free(&r);
		cr_skip_test("no git");
	}
	pxrun_free(&r);
	cr_assert_eq(pxrun(&r, 30, "/usr/bin/env", add), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(check(&r, tmp), 1, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out,
			 "obj/x.o:1: build output tracked in git\n"
			 "tests/fake/__pycache__/fake.cpython-311.pyc:1: "
			 "build output tracked in git\n");
	pxrun_free(&r);
}
