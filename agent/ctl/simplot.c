/* simplot.c -- cost and fleet-size plots of simulation runs through
 * gnuplot (see simplot.h). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../spawnattr.h"
#include "simplot.h"

extern char **environ;

#define TITLE_MAX 200

enum px_err simplot_format_of(const char *path, enum simplot_format *ret,
			      struct px_error *err)
{
	const char *dot = strrchr(path, '.');

	if (dot && !strcasecmp(dot, ".png")) {
		*ret = SIMPLOT_PNG;
		return PX_OK;
	}
	if (dot && !strcasecmp(dot, ".svg")) {
		*ret = SIMPLOT_SVG;
		return PX_OK;
	}
	return px_errorf(err, PX_EINVAL, "plot file '%s': unknown format "
			 "(the name must end in .png or .svg)", path);
}

/* Copy title keeping only characters that are inert in a gnuplot string. */
void simplot_safe_title(const char *in, char *out, size_t len)
{
	static const char ok[] = " .,:_/()+-";
	size_t i = 0;

	for (; in && *in && i + 1 < len; in++, i++) {
		unsigned char c = (unsigned char)*in;
		bool good = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || (c && strchr(ok, c));
		out[i] = good ? (char)c : '_';
	}
	out[i] = '\0';
}

void simplot_terminal(FILE *f, enum simplot_format fmt, int height)
{
	if (fmt == SIMPLOT_PNG)
		fprintf(f, "set terminal pngcairo size 1200,%d font 'sans,11' "
			"linewidth 1.5\n", height);
	else
		fprintf(f, "set terminal svg size 1200,%d dynamic "
			"font 'sans,11' linewidth 1.5\n", height);
	/* no file name: the output is our standard output */
	fputs("set output\n", f);
}

struct sim_script {
	const char *title;
	int64_t start_s;
	const struct sim_result *res;
	size_t n;
};

static void write_script(FILE *f, enum simplot_format fmt, void *ctx)
{
	const struct sim_script *s = ctx;
	const struct sim_result *res = s->res;
	int64_t start_s = s->start_s;
	size_t n = s->n;
	char t[TITLE_MAX], when[32];

	simplot_safe_title(s->title, t, sizeof t);
	simplot_terminal(f, fmt, 900);
	for (size_t p = 0; p < n; p++) {
		fprintf(f, "$d%zu << EOD\n", p);
		for (size_t i = 0; i < res[p].n_series; i++) {
			const struct sim_point *pt = &res[p].series[i];
			fprintf(f, "%.5f %.6f %d %d %.4f\n",
				(double)(pt->t_s - start_s) / 3600.0,
				(double)pt->cost_uusd / 1e6, pt->spot,
				pt->ondemand, pt->work_done_h);
		}
		fputs("EOD\n", f);
	}
	fprintf(f, "set multiplot layout 2,1 title '%s (start %s)' "
		"font 'sans,13'\n", t,
		px_format_time(start_s, when, sizeof when));
	fputs("set grid\n"
	      "set key left top box opaque reverse Left width 1\n"
	      "set xlabel 'hours since start'\n"
	      "set ylabel 'cost so far (USD)'\n"
	      "set format y '%.0f'\n"
	      "set xrange [0:*]\n"
	      "set yrange [0:*]\n"
	      "set title 'cost over time'\n", f);
	fputs("plot ", f);
	for (size_t p = 0; p < n; p++)
		fprintf(f, "%s$d%zu using 1:2 with steps lw 2 lc %zu "
			"title '%s'", p ? ", " : "", p, p + 1,
			res[p].policy);
	fputs("\nset ylabel 'instances running'\n"
	      "set title 'fleet size over time (solid: all instances; "
	      "dashed: on-demand)'\n", f);
	fputs("plot ", f);
	for (size_t p = 0; p < n; p++)
		fprintf(f, "%s$d%zu using 1:($3+$4) with steps lw 2 lc %zu "
			"title '%s', $d%zu using 1:4 with steps lw 1 dt 2 "
			"lc %zu notitle", p ? ", " : "", p, p + 1,
			res[p].policy, p, p + 1);
	fputs("\nunset multiplot\n", f);
}

/* Run gnuplot on script with standard output going to out_fd. */
static enum px_err run_gnuplot(const char *script, int out_fd,
			       struct px_error *err)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = {"gnuplot", (char *)script, NULL};
	pid_t pid;
	int rc, st = 0;

	if (posix_spawn_file_actions_init(&fa))
		return px_errorf(err, PX_ENOMEM, "out of memory");
	rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	if (!rc)
		rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
						      O_RDONLY, 0);
	if (!rc)   /* no descriptor of ours but those (spawnattr.h) */
		rc = px_spawn_close_from(&fa, 3);
	if (!rc)
		rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc == ENOENT)
		return px_errorf(err, PX_ENOENT, "gnuplot not found in PATH "
				 "(install the Debian package gnuplot-nox)");
	if (rc)
		return px_errorf(err, PX_ESYS | rc, "cannot start gnuplot: %s",
				 strerror(rc));
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return px_errorf(err, PX_ESYS | errno, "waitpid: %s",
					 strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return PX_OK;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return px_errorf(err, PX_ENOENT, "gnuplot could not be run "
				 "(install the Debian package gnuplot-nox)");
	return px_errorf(err, PX_EIO, "gnuplot failed (%s %d)",
			 WIFEXITED(st) ? "exit status" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

enum px_err simplot_draw(const char *path, enum simplot_format fmt,
			 const char *title, int64_t start_s,
			 const struct sim_result *results, size_t n,
			 struct px_error *err)
{
	struct sim_script s = { title, start_s, results, n };

	return simplot_render(path, fmt, write_script, &s, err);
}

enum px_err simplot_render(const char *path, enum simplot_format fmt,
			   simplot_script_fn *script_fn, void *ctx,
			   struct px_error *err)
{
	const char *tmpdir = getenv("TMPDIR");
	char *script = NULL;
	struct px_atomic out;
	struct stat st;
	FILE *f = NULL;
	int sfd = -1;
	enum px_err e = PX_OK;

	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	if (asprintf(&script, "%s/proteus-plot-XXXXXX", tmpdir) < 0)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	sfd = mkstemp(script);
	if (sfd < 0) {
		e = px_errorf(err, PX_EIO, "cannot create a temporary file in "
			      "'%s': %s", tmpdir, strerror(errno));
		goto out_free;
	}
	f = fdopen(sfd, "w");
	if (!f) {
		e = px_errorf(err, PX_EIO, "%s: %s", script, strerror(errno));
		close(sfd);
		goto out_unlink;
	}
	script_fn(f, fmt, ctx);
	if (fclose(f)) {
		e = px_errorf(err, PX_EIO, "%s: write failed: %s", script,
			      strerror(errno));
		goto out_unlink;
	}
	/* what is there must be a file (rename would replace a FIFO or a
	 * device, and a directory is a mistake); gnuplot draws into a
	 * temporary file beside it, renamed over it once whole: a symlink
	 * there is replaced, not written through, and a failed plot leaves
	 * the file there as it was */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		e = px_errorf(err, PX_EIO, "plot file '%s': not a regular "
			      "file: refused", path);
		goto out_unlink;
	}
	if (px_atomic_open(&out, path, 0644) != 0) {
		e = px_errorf(err, PX_EIO, "plot file '%s': cannot create a "
			      "file in its folder: %s", path, strerror(errno));
		goto out_unlink;
	}
	e = run_gnuplot(script, out.fd, err);
	if (e != PX_OK)
		px_error_prefix(err, "plot '%s': ", path);
	if (e == PX_OK && lseek(out.fd, 0, SEEK_END) <= 0)
		e = px_errorf(err, PX_EIO, "gnuplot wrote nothing to '%s'",
			      path);
	if (e == PX_OK && px_atomic_commit(&out, path) != 0)
		e = px_errorf(err, PX_EIO, "plot file '%s': %s", path,
			      strerror(errno));
	px_atomic_abort(&out);
out_unlink:
	unlink(script);
out_free:
	free(script);
	return e;
}
