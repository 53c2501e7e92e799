/* simplot.h -- draw simulation results (cost and fleet size over time, one
 * line per policy) to PNG or SVG by running gnuplot as a subprocess.
 *
 * The data and the script go to one temporary file (the data as gnuplot
 * datablocks), gnuplot is started with posix_spawnp and no shell, and its
 * standard output is the output file (a temporary one beside it, renamed
 * over it once drawn), opened here: no user-supplied string
 * ever reaches a shell or the gnuplot script except the title, which is
 * reduced to safe characters.  This module does not log.
 */
#ifndef PX_SIMPLOT_H
#define PX_SIMPLOT_H

#include <stddef.h>
#include <stdio.h>

#include "../../common/px.h"
#include "../world/sim.h"

enum simplot_format { SIMPLOT_PNG = 0, SIMPLOT_SVG, SIMPLOT_FORMAT_MAX };

/* The format named by path's extension (.png or .svg, any case);
 * PX_EINVAL naming the path and the extensions known otherwise. */
enum px_err simplot_format_of(const char *path, enum simplot_format *ret,
			      struct px_error *err);

/* Draw results[0..n) (each with its series; sim_setup.series) to path in
 * format fmt.  title is free text (characters other than letters, digits,
 * space and ".,:_/()+-" are replaced by '_').  The time axis is hours since
 * start_s.  Errors: PX_ENOENT when gnuplot is not installed, PX_EIO when
 * it fails (its stderr passes through to ours) or a file cannot be
 * written, PX_ENOMEM.  The plot goes to a temporary file beside path,
 * renamed over it once whole (px_atomic_open): a symlink at path is
 * replaced, not followed, and a failed plot leaves path as it was. */
enum px_err simplot_draw(const char *path, enum simplot_format fmt,
			 const char *title, int64_t start_s,
			 const struct sim_result *results, size_t n,
			 struct px_error *err);

/* The machinery under simplot_draw, for other plots (proteusctl report):
 * script_fn writes the whole gnuplot script (data blocks and plots) to f,
 * starting with simplot_terminal; it runs into a temporary file, gnuplot
 * draws to path.  Errors as simplot_draw's. */
typedef void simplot_script_fn(FILE *f, enum simplot_format fmt, void *ctx);
enum px_err simplot_render(const char *path, enum simplot_format fmt,
			   simplot_script_fn *script_fn, void *ctx,
			   struct px_error *err);
/* The terminal lines for fmt, 1200 pixels wide and height high, output
 * to gnuplot's standard output. */
void simplot_terminal(FILE *f, enum simplot_format fmt, int height);
/* in, with characters other than letters, digits, space and ".,:_/()+-"
 * replaced by '_' (inert in a gnuplot string), into out. */
void simplot_safe_title(const char *in, char *out, size_t len);

#endif
