/* workload.c -- the workload file of `simulate --workload`, and the
 * output of its runs (see workload.h). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "cli.h"
#include "simrun.h"
#include "workload.h"

/* A pool key's value: a limit as text ("standard=64,g=16") or a count. */
static enum px_err limit_of(const char *path, const char *key, json_t *v,
			    struct pool_limit *ret, struct px_error *err)
{
	char field[160], num[32];

	snprintf(field, sizeof field, "%s: pool.%s", path, key);
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		return pool_limit_parse(field, num, ret, err);
	}
	if (json_is_string(v))
		return pool_limit_parse(field, json_string_value(v), ret, err);
	return px_errorf(err, PX_EINVAL, "%s: a count of vCPUs or a string "
			 "like \"standard=64,g=16\"", field);
}

static enum px_err pool_of(const char *path, json_t *pool,
			   struct workload *w, struct px_error *err)
{
	const char *key;
	json_t *v;
	enum px_err e = PX_OK;

	if (pool && !json_is_object(pool))
		return px_errorf(err, PX_EINVAL, "%s: pool: an object of the "
				 "daemon's pool keys", path);
	json_object_foreach(pool, key, v) {
		double x = json_number_value(v);

		if (key[0] == '_')
			continue;     /* a comment */
		if (!strcmp(key, "pool_spot_vcpus")) {
			e = limit_of(path, key, v, &w->limits.spot, err);
		} else if (!strcmp(key, "pool_ondemand_vcpus")) {
			e = limit_of(path, key, v, &w->limits.ondemand, err);
		} else if (!strcmp(key, "pool_usd_per_hour")) {
			if (!json_is_number(v) || !(x >= 0) || x > 1e6)
				return px_errorf(err, PX_EINVAL, "%s: pool.%s:"
						 " US dollars an hour, 0 to "
						 "1000000", path, key);
			w->limits.uusd_per_hour =
				llround(x * PX_UUSD_PER_USD);
		} else if (!strcmp(key, "pool_lease_seconds")) {
			if (!json_is_integer(v) || json_integer_value(v) < 60
			    || json_integer_value(v) > 86400)
				return px_errorf(err, PX_EINVAL, "%s: pool.%s:"
						 " whole seconds, 60 to "
						 "86400", path, key);
			w->lease_s = json_integer_value(v);
		} else if (!strcmp(key, "pool_fairness")) {
			if (!json_is_number(v) || !(x > 0 && x <= 1))
				return px_errorf(err, PX_EINVAL, "%s: pool.%s:"
						 " a share of the jobs, above 0"
						 " and at most 1", path, key);
			w->fairness = x;
		} else {
			return px_errorf(err, PX_EINVAL, "%s: pool.%s: unknown "
					 "key (pool_spot_vcpus, "
					 "pool_ondemand_vcpus, "
					 "pool_usd_per_hour, "
					 "pool_lease_seconds, pool_fairness)",
					 path, key);
		}
		if (e != PX_OK)
			return e;
	}
	return PX_OK;
}

/* One entry of jobs[]. */
static enum px_err job_of(const char *path, size_t i, json_t *o,
			  struct workload *w, struct px_error *err)
{
	struct wl_job *j = &w->jobs[i];
	struct jobspec *sp = &w->specs[i];
	json_t *arr = json_object_get(o, "arrival_hours");
	json_t *wt = json_object_get(o, "weight");
	json_t *nm = json_object_get(o, "name");
	json_t *spec = json_object_get(o, "job");
	const char *key;
	json_t *v;
	char where[128];
	enum px_err e;

	snprintf(where, sizeof where, "%s: jobs[%zu]", path, i);
	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: an object", where);
	json_object_foreach(o, key, v)
		if (key[0] != '_' && strcmp(key, "arrival_hours") &&
		    strcmp(key, "weight") &&
		    strcmp(key, "name") && strcmp(key, "job"))
			return px_errorf(err, PX_EINVAL, "%s.%s: unknown key "
					 "(arrival_hours, weight, name, job)",
					 where, key);
	j->arrival_hours = arr ? json_number_value(arr) : 0;
	if ((arr && !json_is_number(arr)) || !(j->arrival_hours >= 0) ||
	    j->arrival_hours > 24 * 366)
		return px_errorf(err, PX_EINVAL, "%s.arrival_hours: hours "
				 "after the window's start, 0 to 8784", where);
	j->weight = wt ? json_number_value(wt) : 1;
	if ((wt && !json_is_number(wt)) || !(j->weight > 0) ||
	    j->weight > 1000)
		return px_errorf(err, PX_EINVAL, "%s.weight: above 0, at "
				 "most 1000 (default 1)", where);
	if (json_is_string(spec)) {
		char file[4096], *text = NULL;

		cli_file_relative(path, json_string_value(spec), file,
				  sizeof file);
		e = simrun_read_job("simulate", file, sp, &text, err);
		free(text);
		if (e != PX_OK) {
			char msg[sizeof err->msg];

			snprintf(msg, sizeof msg, "%s", err->msg);
			return px_errorf(err, e, "%s.job: %s", where, msg);
		}
	} else if (json_is_object(spec)) {
		char *text = json_dumps(spec, JSON_COMPACT);

		if (!text)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		e = jobspec_parse(text, strlen(text), where, sp, err);
		free(text);
		if (e == PX_OK && sp->profile_path[0]) {
			char pp[4096];

			cli_file_relative(path, sp->profile_path, pp,
					  sizeof pp);
			e = jobspec_profile_load(pp, sp, err);
		}
		if (e != PX_OK)
			return e;
	} else {
		return px_errorf(err, PX_EINVAL, "%s.job: a job spec (an "
				 "object) or the name of its file", where);
	}
	j->job = sp;
	if (nm && (!json_is_string(nm) || !json_string_length(nm) ||
		   json_string_length(nm) >= sizeof j->name))
		return px_errorf(err, PX_EINVAL, "%s.name: a name of 1 to %zu "
				 "characters", where, sizeof j->name - 1);
	snprintf(j->name, sizeof j->name, "%s",
		 nm ? json_string_value(nm) : sp->name);
	for (size_t k = 0; k < i; k++)
		if (!strcmp(w->jobs[k].name, j->name))
			return px_errorf(err, PX_EINVAL, "%s.name: '%s' is "
					 "jobs[%zu]'s too; each job needs a "
					 "name of its own (\"name\")", where,
					 j->name, k);
	if (i == 0)
		snprintf(w->region, sizeof w->region, "%s", sp->region);
	else if (strcmp(w->region, sp->region))
		return px_errorf(err, PX_EINVAL, "%s.job.region: '%s', but "
				 "the pool is one account's region, '%s' (jobs"
				 "[0])", where, sp->region, w->region);
	return PX_OK;
}

enum px_err workload_load(const char *path, struct workload *ret,
			  struct px_error *err)
{
	struct workload w;
	json_error_t je;
	json_t *root, *jobs, *v;
	const char *key;
	char *buf;
	size_t len;
	enum px_err e;

	memset(&w, 0, sizeof w);
	pool_limits_none(&w.limits);
	w.lease_s = WL_LEASE_DEFAULT_S;
	w.fairness = ARB_FAIRNESS_DEFAULT;
	e = px_read_file(path, WORKLOAD_FILE_MAX, &buf, &len, err);
	if (e != PX_OK)
		return e;
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	if (!root)
		return px_errorf(err, PX_EINVAL, "%s: line %d: %s", path,
				 je.line, je.text);
	if (!json_is_object(root)) {
		e = px_errorf(err, PX_EINVAL, "%s: an object {\"pool\": ..., "
			      "\"jobs\": [...]}", path);
		goto out;
	}
	json_object_foreach(root, key, v)
		if (key[0] != '_' && strcmp(key, "pool") &&
		    strcmp(key, "jobs")) {
			e = px_errorf(err, PX_EINVAL, "%s: %s: unknown key "
				      "(pool, jobs)", path, key);
			goto out;
		}
	e = pool_of(path, json_object_get(root, "pool"), &w, err);
	if (e != PX_OK)
		goto out;
	jobs = json_object_get(root, "jobs");
	if (!json_is_array(jobs) || !json_array_size(jobs) ||
	    json_array_size(jobs) > WL_JOBS_MAX) {
		e = px_errorf(err, PX_EINVAL, "%s: jobs: an array of 1 to %d "
			      "jobs", path, WL_JOBS_MAX);
		goto out;
	}
	w.n = json_array_size(jobs);
	w.jobs = px_calloc(w.n, sizeof *w.jobs);
	w.specs = px_calloc(w.n, sizeof *w.specs);
	if (!w.jobs || !w.specs) {
		e = px_errorf(err, PX_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < w.n && e == PX_OK; i++)
		e = job_of(path, i, json_array_get(jobs, i), &w, err);
out:
	json_decref(root);
	if (e != PX_OK) {
		workload_release(&w);
		return e;
	}
	*ret = w;
	return PX_OK;
}

void workload_release(struct workload *w)
{
	if (!w)
		return;
	free(w->jobs);
	free(w->specs);
	w->jobs = NULL;
	w->specs = NULL;
	w->n = 0;
}

/* ---- output ---- */

static void limits_line(const struct pool_limits *l, char *buf, size_t len)
{
	char s[160], o[160], u[32] = "none";

	pool_limit_format(&l->spot, s, sizeof s);
	pool_limit_format(&l->ondemand, o, sizeof o);
	if (l->uusd_per_hour >= 0)
		snprintf(u, sizeof u, "%.2f",
			 (double)l->uusd_per_hour / PX_UUSD_PER_USD);
	snprintf(buf, len, "spot vCPUs %s, on-demand vCPUs %s, USD/h %s", s,
		 o, u);
}

void workload_print(const char *path, const struct workload *w,
		    const struct wl_setup *s, const struct wl_result *r,
		    size_t n)
{
	char lim[512], a[32], b[32], x[5][32];

	limits_line(&s->limits, lim, sizeof lim);
	printf("workload %s: %zu jobs, policy %s, %s billing\n",
	       simrun_base_name(path), w->n, s->policy->name,
	       billing_model_name(s->billing));
	printf("window %s .. %s, seed %" PRIu64 "\n",
	       px_format_time(s->start_s, a, sizeof a),
	       px_format_time(s->end_s, b, sizeof b), s->seed);
	printf("pool: %s; lease %" PRId64 " s, fairness %.2f\n\n", lim,
	       s->lease_s, s->fairness);
	printf("%-12s %8s %9s %9s %10s %6s %6s %9s %9s %5s\n", "ARBITER",
	       "MAX_RHO", "MEAN_H", "P95_H", "COST_USD", "UTIL", "ROUNDS",
	       "PEAK_SPOT", "PEAK_USD", "OVER");
	for (size_t i = 0; i < n; i++)
		printf("%-12s %8s %9s %9s %10s %6s %6" PRId64 " %9" PRId64
		       " %9s %5" PRId64 "\n", r[i].arbiter,
		       simrun_fmt(x[0], 32, "%.3f", r[i].max_rho, "-"),
		       simrun_fmt(x[1], 32, "%.2f", r[i].mean_completion_hours,
				  "-"),
		       simrun_fmt(x[2], 32, "%.2f", r[i].p95_completion_hours,
				  "-"),
		       simrun_fmt(x[3], 32, "%.2f", r[i].cost_usd, "-"),
		       simrun_fmt(x[4], 32, "%.2f", r[i].utilisation, "-"),
		       r[i].rounds, r[i].peak_spot_vcpus,
		       simrun_fmt(a, 32, "%.2f", r[i].peak_usd_per_hour, "-"),
		       r[i].over_limit);
	for (size_t i = 0; i < n; i++) {
		printf("\n%s:\n%-20s %9s %8s %9s %9s %7s %9s %6s\n",
		       r[i].arbiter, "JOB", "ARRIVAL_H", "WAIT_H", "DONE_H",
		       "ALONE_H", "RHO", "COST_USD", "SHEDS");
		for (size_t k = 0; k < r[i].n_jobs; k++) {
			const struct wl_job_result *j = &r[i].jobs[k];

			printf("%-20s %9.2f %8.2f %9s %9.2f %7s %9.2f %6"
			       PRId64 "\n", j->name, j->arrival_hours,
			       j->wait_hours,
			       j->completed ? simrun_fmt(x[0], 32, "%.2f",
							 j->completion_hours,
							 "-")
					    : "not done",
			       j->alone_hours,
			       simrun_fmt(x[1], 32, "%.3f", j->rho, "-"),
			       j->cost_usd, j->sheds);
		}
	}
}

static json_t *result_json(const struct wl_result *r)
{
	json_t *jobs = json_array(), *o;

	for (size_t k = 0; jobs && k < r->n_jobs; k++) {
		const struct wl_job_result *j = &r->jobs[k];
		json_t *x = json_pack(
			"{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:I, "
			"s:I, s:I}", "name", j->name,
			"rho", simrun_jnum(j->rho),
			"completion_hours", simrun_jnum(j->completion_hours),
			"cost_usd", simrun_jnum(j->cost_usd),
			"arrival_hours", simrun_jnum(j->arrival_hours),
			"wait_hours", simrun_jnum(j->wait_hours),
			"alone_hours", simrun_jnum(j->alone_hours),
			"completed", j->completed,
			"work_done_hours", simrun_jnum(j->work_done_hours),
			"evictions", (json_int_t)j->run.evictions,
			"sheds", (json_int_t)j->sheds,
			"refused", (json_int_t)j->refused);

		if (!x || json_array_append_new(jobs, x)) {
			json_decref(jobs);
			return NULL;
		}
	}
	if (!jobs)
		return NULL;
	o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:o, "
		      "s:I, s:o}", "arbiter", r->arbiter,
		      "max_rho", simrun_jnum(r->max_rho),
		      "mean_completion_hours",
		      simrun_jnum(r->mean_completion_hours),
		      "p95_completion_hours",
		      simrun_jnum(r->p95_completion_hours),
		      "cost_usd", simrun_jnum(r->cost_usd),
		      "utilisation", simrun_jnum(r->utilisation),
		      "rounds", (json_int_t)r->rounds,
		      "peak_spot_vcpus", (json_int_t)r->peak_spot_vcpus,
		      "peak_ondemand_vcpus",
		      (json_int_t)r->peak_ondemand_vcpus,
		      "peak_usd_per_hour", simrun_jnum(r->peak_usd_per_hour),
		      "over_limit", (json_int_t)r->over_limit,
		      "jobs", jobs);
	return o;
}

static json_t *limit_json(const struct pool_limit *l)
{
	char buf[160];

	pool_limit_format(l, buf, sizeof buf);
	return json_string(buf);
}

int workload_print_json(const char *path, const struct workload *w,
			const struct wl_setup *s, const struct wl_result *r,
			size_t n)
{
	char a[32], b[32];
	json_t *arr = json_array(), *o = NULL;

	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, result_json(&r[i]))) {
			json_decref(arr);
			arr = NULL;
		}
	if (arr)
		o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:I, s:{s:o, "
			      "s:o, s:o, s:I, s:o}, s:o}",
			      "workload", simrun_base_name(path),
			      "jobs", (json_int_t)w->n,
			      "policy", s->policy->name,
			      "billing", billing_model_name(s->billing),
			      "start", px_format_time(s->start_s, a, sizeof a),
			      "end", px_format_time(s->end_s, b, sizeof b),
			      "seed", (json_int_t)s->seed,
			      "pool",
			      "pool_spot_vcpus", limit_json(&s->limits.spot),
			      "pool_ondemand_vcpus",
			      limit_json(&s->limits.ondemand),
			      "pool_usd_per_hour",
			      s->limits.uusd_per_hour >= 0 ?
			      simrun_jnum((double)s->limits.uusd_per_hour /
					  PX_UUSD_PER_USD) : json_null(),
			      "pool_lease_seconds", (json_int_t)s->lease_s,
			      "pool_fairness", simrun_jnum(s->fairness),
			      "results", arr);
	return simrun_json_out(o, "the results");
}

struct plot_ctx {
	const char *path;
	const struct wl_result *r;
	size_t n;
};

/* Two panels: each job's completion hours and its rho, a bar per
 * arbiter. */
static void plot_script(FILE *f, enum simplot_format fmt, void *ctx)
{
	const struct plot_ctx *c = ctx;
	char t[160], name[JOBSPEC_NAME_MAX];

	snprintf(t, sizeof t, "workload %s", simrun_base_name(c->path));
	simplot_safe_title(t, t, sizeof t);
	simplot_terminal(f, fmt, 900);
	fputs("$d << EOD\n", f);
	for (size_t k = 0; c->n && k < c->r[0].n_jobs; k++) {
		simplot_safe_title(c->r[0].jobs[k].name, name, sizeof name);
		for (char *p = name; *p; p++)
			if (*p == ' ')
				*p = '_';
		fprintf(f, "\"%s\"", name);
		for (size_t i = 0; i < c->n; i++)
			fprintf(f, " %.6f %.6f",
				c->r[i].jobs[k].completion_hours,
				c->r[i].jobs[k].rho);
		fputc('\n', f);
	}
	fprintf(f, "EOD\nset multiplot layout 2,1 title '%s' font "
		"'sans,13'\nset style data histogram\n"
		"set style histogram cluster gap 1\nset style fill solid "
		"0.8 border -1\nset grid ytics\nset key outside right top\n"
		"set xtics rotate by -30\nset yrange [0:*]\n", t);
	fputs("set ylabel 'completion, hours'\nplot ", f);
	for (size_t i = 0; i < c->n; i++)
		fprintf(f, "%s$d using %zu:xtic(1) title '%s'",
			i ? ", " : "", 2 + 2 * i, c->r[i].arbiter);
	fputs("\nset ylabel 'rho (finish-time fairness)'\nplot ", f);
	for (size_t i = 0; i < c->n; i++)
		fprintf(f, "%s$d using %zu:xtic(1) title '%s'",
			i ? ", " : "", 3 + 2 * i, c->r[i].arbiter);
	fputs("\nunset multiplot\n", f);
}

enum px_err workload_plot(const char *plot, enum simplot_format fmt,
			  const char *path, const struct wl_result *r,
			  size_t n, struct px_error *err)
{
	struct plot_ctx c = {.path = path, .r = r, .n = n};

	return simplot_render(plot, fmt, plot_script, &c, err);
}
