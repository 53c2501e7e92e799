/* test_style.c -- scripts/check-style (docs/architecture.md, "Style
 * check"): a tree that breaks each rule once gets exactly one line per
 * break, what hides in comments and strings or lies in tests/ gets none,
 * and the real tree passes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pxrun.h"

static char *tmp, *script;

static void setup(void)
{
	char *s = px_src_path("scripts/check-style");

	cr_assert_not_null(s);
	script = realpath(s, NULL);
	cr_assert_not_null(script, "no %s", s);
	free(s);
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
	free(script);
}

TestSuite(style, .init = setup, .fini = teardown, .timeout = 60);

/* text at <tmp>/rel, the folders on the way made. */
static void put(const char *rel, const char *text)
{
	cr_assert_eq(px_put_file(tmp, rel, text), 0, "%s/%s: %s", tmp, rel,
		     strerror(errno));
}

/* A file of purpose line head whose function name has a body of n lines. */
static void put_fn(const char *rel, const char *head, const char *name,
		   int n)
{
	size_t cap = 256 + (size_t)n * 8;
	char *t = malloc(cap);
	size_t k;

	cr_assert_not_null(t);
	k = (size_t)snprintf(t, cap, "%s\nstatic int %s(int x)\n{\n", head,
			     name);
	for (int i = 0; i < n - 1; i++)
		k += (size_t)snprintf(t + k, cap - k, "\tx++;\n");
	snprintf(t + k, cap - k, "\treturn x;\n}\n");
	put(rel, t);
	free(t);
}

static int check(struct pxrun *r, const char *root)
{
	const char *argv[] = {"check-style", root, NULL};

	cr_assert_eq(pxrun(r, 30, script, argv), 0, "spawn failed");
	return r->status;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Times s holds what. */
static int count(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

/* What check-style must say of each break the first test makes: the
 * start of its line, and the rule the line ends with. */
static const struct {
	const char *line, *rule;
} breaks[] = {
	{"db/calls.c:6: sprintf(): ", "(banned-call)"},
	{"db/calls.c:7: atoi(): ", "(banned-call)"},
	{"db/nameless.c:1: ", "(purpose-line)"},
	{"db/pointer.c:1: ", "(purpose-line)"},
	{"db/misnamed.c:1: ", "(purpose-line)"},
	{"tests/unit/test_y.c:1: ", "(purpose-line)"},
	{"trainer/long.c:2: too_long() is 101 lines, over 100",
	 "(function-length)"},
	{"trainer/grown.c:2: grown() grew to 120 lines, 110 recorded",
	 "(function-length)"},
	{"scripts/style-long-functions.txt:4: trainer/short.c now_short is "
	 "40 lines now, within 100: drop the entry", "(long-list)"},
	{"scripts/style-long-functions.txt:5: trainer/gone.c gone: no such "
	 "function", "(long-list)"},
	{"scripts/style-long-functions.txt:6: trainer/over.c overstated is "
	 "130 lines now, 150 recorded: lower it", "(long-list)"},
	{"agent/core.c:2: agent/core.c includes agent/world/sim.h",
	 "(include-direction)"},
	{"cloudapi/c.c:4: cloudapi/c.c includes trainer/t.h",
	 "(include-direction)"},
	{"trainer/t.c:3: trainer/t.c includes agent/a.h",
	 "(include-direction)"},
	{"agent/pick.c:4: WORLD_EC2 names a world outside agent/world/",
	 "(world-name)"},
	{"agent/pick.c:5: the world name \"local\" outside agent/world/",
	 "(world-name)"},
	/* the trainer's own layers: compute <- io <- loops <- dist <- cli,
	 * each broken once, and the agent kept out of the program */
	{"trainer/compute/k.c:3: trainer/compute/k.c includes trainer/io/d.h",
	 "(include-direction)"},
	{"trainer/io/d.c:3: trainer/io/d.c includes trainer/l.h",
	 "(include-direction)"},
	{"trainer/l.c:3: trainer/l.c includes trainer/dist/n.h",
	 "(include-direction)"},
	{"trainer/dist/n.c:3: trainer/dist/n.c includes trainer/cli/c.h",
	 "(include-direction)"},
	{"agent/uses.c:3: agent/uses.c includes trainer/cli/c.h",
	 "(include-direction)"},
};

Test(style, each_rule_fails_once_on_its_own_break)
{
	size_t n = sizeof breaks / sizeof breaks[0];
	struct pxrun r;

	/* kept: every banned name only in comments, strings and longer names */
	put("common/good.h", "/* good.h -- a header that keeps the rules. */\n"
	    "int good(char *b, unsigned long n);\n");
	put("common/good.c",
	    "/* good.c -- a file that keeps every rule: sprintf( here is\n"
	    " * a comment */\n"
	    "#include <stdio.h>\n"
	    "#include <string.h>\n"
	    "#include \"good.h\"\n"
	    "// strcpy(a, b) in a line comment\n"
	    "int good(char *b, unsigned long n)\n"
	    "{\n"
	    "\tchar *save, c = '\"';\n"
	    "\tsnprintf(b, n, \"atoi(%c) strcat(\", c);\n"
	    "\treturn strtok_r(b, \",\", &save) != NULL;\n"
	    "}\n");
	/* banned-call: two on two lines */
	put("db/calls.c", "/* calls.c -- unbounded and unchecked calls. */\n"
	    "#include <stdio.h>\n"
	    "#include <stdlib.h>\n"
	    "int calls(char *b, const char *s)\n"
	    "{\n"
	    "\tsprintf(b, \"%s\", s);\n"
	    "\treturn atoi(s);\n"
	    "}\n");
	/* purpose-line: none, another file's, only a pointer */
	put("db/nameless.c", "/* The store's helpers. */\nint nameless;\n");
	put("db/misnamed.c", "/* named.c -- a copy's old name. */\nint m;\n");
	put("db/pointer.c", "/* pointer.c -- see pointer.h. */\nint pointer;\n");
	/* function-length: over the limit and unlisted; listed and grown;
	 * listed; and the list's other entries stale or overstated (which
	 * would let the function grow unseen) */
	put_fn("trainer/long.c", "/* long.c -- one long function. */",
	       "too_long", 101);
	put_fn("trainer/grown.c", "/* grown.c -- a listed function grown. */",
	       "grown", 120);
	put_fn("trainer/kept.c", "/* kept.c -- a listed function. */", "kept",
	       130);
	put_fn("trainer/over.c", "/* over.c -- a listed function shrunk. */",
	       "overstated", 130);
	put_fn("trainer/short.c", "/* short.c -- a listed one now short. */",
	       "now_short", 40);
	put("scripts/style-long-functions.txt",
	    "# path function lines reason\n"
	    "trainer/kept.c kept 128 a reason\n"
	    "trainer/grown.c grown 110 a reason\n"
	    "trainer/short.c now_short 120 a reason\n"
	    "trainer/gone.c gone 150 a reason\n"
	    "trainer/over.c overstated 150 a reason\n");
	/* include-direction: trainer/ into cloudapi/, agent/ into trainer/;
	 * the core into its worlds (no exception excuses it: the worlds'
	 * interface is the core's, agent/world.h), the worlds into it */
	put("trainer/t.h", "/* t.h -- a trainer header. */\n");
	put("agent/a.h", "/* a.h -- an agent header. */\n");
	put("agent/world.h", "/* world.h -- the worlds' interface. */\n");
	put("agent/world/sim.h", "/* sim.h -- a world's own header. */\n"
	    "#include \"../world.h\"\n");
	put("agent/controller.h", "/* controller.h -- the core's own. */\n"
	    "#include \"world.h\"\n");
	put("agent/core.c", "/* core.c -- the core into a world. */\n"
	    "#include \"world/sim.h\"\n");
	put("cloudapi/c.c", "/* c.c -- up into the trainer. */\n"
	    "#include <stdio.h>\n"
	    "/* #include \"../trainer/t.h\" in a comment is none */\n"
	    "#include \"../trainer/t.h\"\n");
	put("trainer/t.c", "/* t.c -- up into the agent. */\n"
	    "#include \"t.h\"\n"
	    "#include \"../agent/a.h\"\n");
	/* world-name: the core naming a world, by enum or by name; not in
	 * a comment, not in a world's own file, not the trainer's command */
	put("agent/pick.c", "/* pick.c -- a rule of \"local\" outside it. */\n"
	    "#include <string.h>\n"
	    "int pick(int k, const char *s)\n"
	    "{\treturn k == WORLD_EC2 ||\n"
	    "\t       !strcmp(s, \"local\"); /* WORLD_SIM, \"sim\" */\n"
	    "}\n");
	put("agent/world/own.c", "/* own.c -- a world names itself. */\n"
	    "const char *own(int k) { return k == WORLD_SIM ? \"sim\" : 0; }\n");
	put("trainer/cmd.c", "/* cmd.c -- the trainer's own command. */\n"
	    "const char *cmd = \"local\";\n");
	/* the trainer's layers: each one into the one above it; the
	 * program into all of them, and the agent into a role, are fine */
	put("trainer/compute/k.h", "/* k.h -- a kernel. */\n");
	put("trainer/io/d.h", "/* d.h -- a data reader. */\n");
	put("trainer/l.h", "/* l.h -- a training loop. */\n");
	put("trainer/dist/n.h", "/* n.h -- a role. */\n");
	put("trainer/cli/c.h", "/* c.h -- the program's own. */\n");
	put("trainer/compute/k.c", "/* k.c -- compute into I/O. */\n"
	    "#include \"k.h\"\n"
	    "#include \"../io/d.h\"\n");
	put("trainer/io/d.c", "/* d.c -- I/O into a loop. */\n"
	    "#include \"../compute/k.h\"\n"
	    "#include \"../l.h\"\n");
	put("trainer/l.c", "/* l.c -- a loop into a role. */\n"
	    "#include \"io/d.h\"\n"
	    "#include \"dist/n.h\"\n");
	put("trainer/dist/n.c", "/* n.c -- a role into the program. */\n"
	    "#include \"../l.h\"\n"
	    "#include \"../cli/c.h\"\n");
	put("trainer/cli/c.c", "/* c.c -- the program over every layer. */\n"
	    "#include \"../compute/k.h\"\n"
	    "#include \"../io/d.h\"\n"
	    "#include \"../l.h\"\n"
	    "#include \"../dist/n.h\"\n");
	put("agent/uses.c", "/* uses.c -- a role, not the program. */\n"
	    "#include \"../trainer/dist/n.h\"\n"
	    "#include \"../trainer/cli/c.h\"\n");
	/* tests/: the purpose line holds, the banned calls do not */
	put("tests/unit/test_x.c", "/* test_x.c -- a test's own numbers. */\n"
	    "#include <stdlib.h>\n"
	    "int x(const char *s) { return atoi(s); }\n");
	put("tests/unit/test_y.c", "/* a test without its name */\n");

	cr_assert_eq(check(&r, tmp), 1, "exit %d, out:\n%s\nerr:\n%s",
		     r.status, r.out, r.err);
	for (size_t i = 0; i < n; i++) {
		const char *at = strstr(r.out, breaks[i].line);
		const char *eol = at ? strchr(at, '\n') : NULL;
		const char *rule = at ? strstr(at, breaks[i].rule) : NULL;

		cr_assert_not_null(at, "no '%s' in:\n%s", breaks[i].line,
				   r.out);
		cr_assert(eol && rule && rule < eol, "'%s' without '%s' in:\n%s",
			  breaks[i].line, breaks[i].rule, r.out);
	}
	/* nothing else: not good.c, not kept.c, not controller.h or sim.h,
	 * not own.c or cmd.c, not trainer/cli/c.c, not the test's atoi */
	cr_assert_eq(lines(r.out), (int)n, "%d lines for %zu breaks:\n%s",
		     lines(r.out), n, r.out);
	pxrun_free(&r);
}

/* owned-parts and jobs-layers, on a jobs_int.h of two parts and four
 * sections: each write outside a part's owner, each identity write
 * outside the files that build a job, and each call of a layer above is
 * one line; reads, own writes, a const view, a file without jobs_int.h
 * and calls downwards are none. */
Test(style, the_jobs_parts_and_layers_hold)
{
	static const char *const want[] = {
		"agent/jobs_events.c:5: calls job_end() of agent/jobs.c",
		"agent/jobs_progress.c:6: writes job->run.t: the run part is "
		"agent/jobs.c's",
		"agent/jobs.c:7: writes job->pg.clock: the pg part is "
		"agent/jobs_progress.c's",
		"agent/workload_x.c:6: writes job->id: the job's identity",
		"agent/workload_x.c:7: writes job->pg: the pg part",
	};
	struct pxrun r;

	put("agent/jobs_int.h", "/* jobs_int.h -- two parts, four layers. */\n"
	    "struct job_run { int t; };\n"
	    "struct job_progress { int clock; };\n"
	    "struct job {\n\tint id;\n\tvoid *wl;\n"
	    "\tstruct job_run run;\n\tstruct job_progress pg;\n};\n"
	    "/* ---- jobs_events.c: the lowest ---- */\n"
	    "void job_event(struct job *j);\n"
	    "/* ---- jobs_progress.c: progress ---- */\n"
	    "void job_progress_take(struct job *j);\n"
	    "/* ---- jobs.c: the core ---- */\n"
	    "struct job *job_new(void);\n"
	    "void job_end(struct job *j);\n"
	    "/* ---- workload_x.c: a workload ---- */\n");
	put("agent/jobs_events.c", "/* jobs_events.c -- calls up. */\n"
	    "#include \"jobs_int.h\"\n"
	    "void job_event(struct job *j)\n"
	    "{\n"
	    "\tjob_end(j);\n"
	    "}\n");
	put("agent/jobs_progress.c", "/* jobs_progress.c -- its own part. */\n"
	    "#include \"jobs_int.h\"\n"
	    "void job_progress_take(struct job *j)\n"
	    "{\n"
	    "\tj->pg.clock++;\n"
	    "\tj->run.t = j->pg.clock == 1;\n"
	    "\tjob_event(j);\n"
	    "}\n");
	put("agent/jobs.c", "/* jobs.c -- the core. */\n"
	    "#include <string.h>\n"
	    "#include \"jobs_int.h\"\n"
	    "void job_end(struct job *j)\n"
	    "{\n"
	    "\tj->run.t = 0;\n"
	    "\tmemset(&j->pg.clock, 0, sizeof j->pg.clock);\n"
	    "\tj->id = 3;\n"
	    "\tjob_progress_take(j);\n"
	    "}\n");
	put("agent/workload_x.c", "/* workload_x.c -- a workload. */\n"
	    "#include \"jobs_int.h\"\n"
	    "int x_poll(struct job *j)\n"
	    "{\n"
	    "\tconst struct job_progress *q = &j->pg;\n"
	    "\tj->id = 5;\n"
	    "\tstruct job_progress *p = &j->pg;\n"
	    "\tj->wl = 0;\n"
	    "\tjob_end(j);\n"
	    "\treturn q->clock + p->clock;\n"
	    "}\n");
	put("agent/other.c", "/* other.c -- no job here. */\n"
	    "struct o { struct { int t; } run; };\n"
	    "void o_set(struct o *j) { j->run.t = 1; }\n");

	cr_assert_eq(check(&r, tmp), 1, "exit %d, out:\n%s\nerr:\n%s",
		     r.status, r.out, r.err);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		cr_assert_not_null(strstr(r.out, want[i]), "no '%s' in:\n%s",
				   want[i], r.out);
	/* (the include exceptions this tree does not need are said too) */
	cr_assert_eq(count(r.out, "(owned-parts)") +
		     count(r.out, "(jobs-layers)"),
		     (int)(sizeof want / sizeof want[0]), "%s", r.out);
	pxrun_free(&r);
}

Test(style, the_real_tree_passes)
{
	char *root = px_src_path("");
	struct pxrun r;

	cr_assert_not_null(root);
	cr_assert_eq(check(&r, root), 0, "scripts/check-style %s:\n%s%s", root,
		     r.out, r.err);
	cr_assert_str_empty(r.out);
	pxrun_free(&r);
	free(root);
}

Test(style, a_bad_argument_is_a_usage_error)
{
	const char *argv[] = {"check-style", "--help", NULL};
	struct pxrun r;

	cr_assert_eq(pxrun(&r, 30, script, argv), 0);
	cr_assert_eq(r.status, 2, "exit %d", r.status);
	cr_assert(strstr(r.err, "usage: check-style"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(check(&r, "/nonexistent/proteus-style"), 2);
	pxrun_free(&r);
}
