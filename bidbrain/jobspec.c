/* jobspec.c -- parse and validate job specs (jansson). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instances.h"
#include "jobspec.h"

/* Parsing context: the file name and error out-param. */
struct jp {
	const char *name;
	struct px_error *err;
};

static enum px_err jp_fail(struct jp *p, const char *path, const char *fmt,
			   ...) __attribute__((format(printf, 3, 4)));

static enum px_err jp_fail(struct jp *p, const char *path, const char *fmt,
			   ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return px_errorf(p->err, PX_EINVAL, "%s: %s: %s", p->name, path, msg);
}

static enum px_err get_string(struct jp *p, json_t *v, const char *path,
			      char *buf, size_t len)
{
	const char *s;
	size_t n;

	if (!json_is_string(v))
		return jp_fail(p, path, "must be a string");
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 0)
		return jp_fail(p, path, "must not be empty");
	if (n >= len || strlen(s) != n)
		return jp_fail(p, path, "longer than %zu bytes or has a NUL",
			       len - 1);
	memcpy(buf, s, n + 1);
	return PX_OK;
}

static enum px_err get_type(struct jp *p, json_t *v, const char *path,
			    char *buf, size_t len)
{
	enum px_err r = get_string(p, v, path, buf, len);
	if (r != PX_OK)
		return r;
	if (!inst_find(buf))
		return jp_fail(p, path, "unknown instance type '%s'", buf);
	return PX_OK;
}

static enum px_err get_int(struct jp *p, json_t *v, const char *path,
			   long lo, long hi, int *ret)
{
	json_int_t x;

	if (!json_is_integer(v))
		return jp_fail(p, path, "must be an integer");
	x = json_integer_value(v);
	if (x < lo || x > hi)
		return jp_fail(p, path, "%lld is out of range [%ld, %ld]",
			       (long long)x, lo, hi);
	*ret = (int)x;
	return PX_OK;
}

/* A number in (lo, hi] (lo_open) or [lo, hi]. */
static enum px_err get_num(struct jp *p, json_t *v, const char *path,
			   double lo, bool lo_open, double hi, double *ret)
{
	double x;

	if (!json_is_number(v))
		return jp_fail(p, path, "must be a number");
	x = json_number_value(v);
	if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
		return jp_fail(p, path, "%g is out of range %s%g, %g]", x,
			       lo_open ? "(" : "[", lo, hi);
	*ret = x;
	return PX_OK;
}

/* "speed" / "interruption_rates": object type -> number in [lo, hi]. */
static enum px_err get_type_map(struct jp *p, json_t *v, const char *path,
				double lo, double hi,
				struct jobspec_type_value *out, size_t *ret_n,
				double *ret_default)
{
	const char *k;
	json_t *x;
	size_t n = 0;
	char sub[JOBSPEC_NAME_MAX + 64];
	enum px_err r;

	if (!json_is_object(v))
		return jp_fail(p, path, "must be an object of type -> number");
	json_object_foreach(v, k, x) {
		snprintf(sub, sizeof sub, "%s.%s", path, k);
		if (ret_default && !strcmp(k, "default")) {
			r = get_num(p, x, sub, lo, false, hi, ret_default);
			if (r != PX_OK)
				return r;
			continue;
		}
		if (n >= JOBSPEC_TYPES_MAX)
			return jp_fail(p, path, "more than %d entries",
				       JOBSPEC_TYPES_MAX);
		if (strlen(k) >= JOBSPEC_NAME_MAX || !inst_find(k))
			return jp_fail(p, sub, "unknown instance type '%.64s'",
				       k);
		memcpy(out[n].type, k, strlen(k) + 1);
		r = get_num(p, x, sub, lo, false, hi, &out[n].v);
		if (r != PX_OK)
			return r;
		n++;
	}
	*ret_n = n;
	return PX_OK;
}

/* An array of n numbers, each in (0, hi]. */
static enum px_err get_nums(struct jp *p, json_t *v, const char *path,
			    double hi, double *out, int *ret_n)
{
	char sub[128];
	size_t i;
	json_t *x;
	enum px_err r;

	if (!json_is_array(v) || json_array_size(v) == 0 ||
	    json_array_size(v) > JOBSPEC_PROFILE_MAX)
		return jp_fail(p, path, "must be an array of 1 to %d numbers",
			       JOBSPEC_PROFILE_MAX);
	json_array_foreach(v, i, x) {
		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		r = get_num(p, x, sub, 0, true, hi, &out[i]);
		if (r != PX_OK)
			return r;
	}
	*ret_n = (int)json_array_size(v);
	return PX_OK;
}

/* A profile's derived fields from its points. */
static void profile_derive(struct jobspec_profile *pr)
{
	for (int i = 0; i < pr->n; i++) {
		pr->log_eff[i] = log(pr->samples_per_s[i] /
				     (pr->workers[i] * pr->samples_per_s[0]) *
				     pr->accuracy_per_sample[i] /
				     pr->accuracy_per_sample[0]);
		pr->log2_workers[i] = log2((double)pr->workers[i]);
	}
}

void jobspec_measured_add(struct jobspec_measured *m, int n, double goodput)
{
	uint32_t k;

	if (n < 1 || n > JOBSPEC_MEASURED_MAX || !isfinite(goodput) ||
	    goodput <= 0)
		return;
	k = m->reports[n] < JOBSPEC_MEASURED_WINDOW ? m->reports[n] + 1
						    : JOBSPEC_MEASURED_WINDOW;
	m->goodput[n] += (goodput - m->goodput[n]) / k;
	m->reports[n]++;
}

void jobspec_measured_add_parts(struct jobspec_measured *m, int n,
				double throughput, double batch)
{
	uint32_t k;

	if (n < 1 || n > JOBSPEC_MEASURED_MAX || !isfinite(throughput) ||
	    throughput <= 0 || !isfinite(batch) || batch <= 0)
		return;
	k = m->parts[n] < JOBSPEC_MEASURED_WINDOW ? m->parts[n] + 1
						  : JOBSPEC_MEASURED_WINDOW;
	m->throughput[n] += (throughput - m->throughput[n]) / k;
	m->batch[n] += (batch - m->batch[n]) / k;
	m->parts[n]++;
}

void jobspec_measured_revalue(struct jobspec_measured *m,
			      double (*eff)(double batch, const void *arg),
			      const void *arg)
{
	for (int i = 1; i <= JOBSPEC_MEASURED_MAX; i++) {
		double e;

		if (!m->parts[i] || !m->reports[i])
			continue;
		e = eff(m->batch[i], arg);
		if (e > 0 && e <= 1)
			m->goodput[i] = m->throughput[i] * e;
	}
}

int jobspec_measured_largest(const struct jobspec_measured *m)
{
	for (int i = JOBSPEC_MEASURED_MAX; i >= 1; i--)
		if (m->reports[i] >= JOBSPEC_MEASURED_MIN)
			return i;
	return 0;
}

int jobspec_explore_limit(int largest, int start, double growth)
{
	double g = largest * growth;

	if (largest < 1)
		return start;
	if (!(g < JOBSPEC_MEASURED_MAX))  /* beyond what is ever measured */
		return JOBSPEC_MEASURED_MAX;
	return (int)g > largest ? (int)g : largest + 1;
}

enum jobspec_explore_ev jobspec_explore_step(struct jobspec_explore *x,
					     const struct jobspec_measured *m,
					     int n, int reliable,
					     int max_spot)
{
	int lim;
	enum jobspec_explore_ev ev = JOBSPEC_EXPLORE_SAME;

	if (x->done)
		return JOBSPEC_EXPLORE_SAME;
	lim = jobspec_explore_limit(jobspec_measured_largest(m), x->start,
				    x->growth);
	if (lim != x->limit) {
		x->limit = lim;
		x->idle = 0;
		ev = JOBSPEC_EXPLORE_LIMIT;
	}
	if (n >= lim)
		x->idle++;
	if (lim - reliable >= max_spot)
		ev = JOBSPEC_EXPLORE_DONE_MAX;
	else if (x->idle >= JOBSPEC_EXPLORE_PATIENCE)
		ev = JOBSPEC_EXPLORE_DONE_IDLE;
	if (ev >= JOBSPEC_EXPLORE_DONE_MAX) {
		x->done = true;
		x->limit = 0;
	}
	return ev;
}

/* The fit's points: the counts measured, the log of their goodput and
 * their weight (reports, at most the window's). */
struct fit_pts {
	int n;
	double at[JOBSPEC_MEASURED_MAX], lg[JOBSPEC_MEASURED_MAX];
	double w[JOBSPEC_MEASURED_MAX];
};

/* The weighted sum of squares of the log residuals at serial s, with
 * the log of g1 that minimises it for that s (a weighted mean) in
 * *ret_lg1. */
static double fit_sse(const struct fit_pts *p, double s, double *ret_lg1)
{
	double r[JOBSPEC_MEASURED_MAX], sw = 0, sr = 0, sse = 0;

	for (int i = 0; i < p->n; i++) {
		r[i] = p->lg[i] - log(p->at[i]) + log1p(s * (p->at[i] - 1));
		sw += p->w[i];
		sr += p->w[i] * r[i];
	}
	*ret_lg1 = sr / sw;
	for (int i = 0; i < p->n; i++)
		sse += p->w[i] * (r[i] - *ret_lg1) * (r[i] - *ret_lg1);
	return sse;
}

/* The grid the search starts from: 0, then FIT_GRID serial values
 * spaced evenly in log from FIT_S_LO to JOBSPEC_SERIAL_MAX; then golden
 * section between the best one's neighbours. */
#define FIT_GRID 96
#define FIT_S_LO 1e-4
#define FIT_ITERS 60

static double fit_grid(int k)
{
	return k == 0 ? 0 : FIT_S_LO * pow(JOBSPEC_SERIAL_MAX / FIT_S_LO,
					    (double)(k - 1) / (FIT_GRID - 1));
}

bool jobspec_measured_fit(const struct jobspec_measured *m, double *ret_g1,
			  double *ret_serial)
{
	struct fit_pts p = {0};
	double best = INFINITY, lg1, a, b, x1, x2, f1, f2;
	const double phi = (sqrt(5.0) - 1) / 2;
	int kb = 0;

	for (int i = 1; i <= JOBSPEC_MEASURED_MAX; i++) {
		if (m->reports[i] < JOBSPEC_MEASURED_MIN)
			continue;
		p.at[p.n] = i;
		p.lg[p.n] = log(m->goodput[i]);
		p.w[p.n++] = m->reports[i] < JOBSPEC_MEASURED_WINDOW ?
			     m->reports[i] : JOBSPEC_MEASURED_WINDOW;
	}
	if (p.n < 2)
		return false;
	for (int k = 0; k <= FIT_GRID; k++) {
		double f = fit_sse(&p, fit_grid(k), &lg1);

		if (f < best) {
			best = f;
			kb = k;
		}
	}
	a = fit_grid(kb > 0 ? kb - 1 : 0);
	b = fit_grid(kb < FIT_GRID ? kb + 1 : FIT_GRID);
	x1 = b - phi * (b - a);
	x2 = a + phi * (b - a);
	f1 = fit_sse(&p, x1, &lg1);
	f2 = fit_sse(&p, x2, &lg1);
	for (int i = 0; i < FIT_ITERS; i++) {
		if (f1 <= f2) {
			b = x2;
			x2 = x1;
			f2 = f1;
			x1 = b - phi * (b - a);
			f1 = fit_sse(&p, x1, &lg1);
		} else {
			a = x1;
			x1 = x2;
			f1 = f2;
			x2 = a + phi * (b - a);
			f2 = fit_sse(&p, x2, &lg1);
		}
	}
	a = (a + b) / 2;
	/* the grid point wins where the search found nothing better (the
	 * best at an end of the range: 0 or JOBSPEC_SERIAL_MAX exactly) */
	if (!(fit_sse(&p, a, &lg1) < best))
		a = fit_grid(kb);
	(void)fit_sse(&p, a, &lg1);
	*ret_g1 = exp(lg1);
	*ret_serial = a;
	return true;
}

bool jobspec_measured_profile(const struct jobspec_measured *m,
			      struct jobspec_profile *ret)
{
	int at[JOBSPEC_MEASURED_MAX], n = 0, k = 0;
	struct jobspec_profile pr;
	double g1, serial;

	if (!jobspec_measured_fit(m, &g1, &serial))
		return false;
	for (int i = 1; i <= JOBSPEC_MEASURED_MAX; i++)
		if (m->reports[i] >= JOBSPEC_MEASURED_MIN)
			at[n++] = i;
	memset(&pr, 0, sizeof pr);
	for (int i = 0; i < n && k < JOBSPEC_PROFILE_MAX; i++) {
		/* the last place goes to the largest count */
		int c = k == JOBSPEC_PROFILE_MAX - 1 ? at[n - 1] : at[i];

		pr.workers[k] = c;
		pr.samples_per_s[k] = m->goodput[c];
		pr.accuracy_per_sample[k++] = 1;
		if (c == at[n - 1])
			break;
	}
	pr.n = k;
	profile_derive(&pr);
	pr.fitted = true;
	pr.serial = serial;
	*ret = pr;
	return true;
}

/* "scaling_profile": {"workers": [1, 2, 4], "samples_per_s": [...],
 * "accuracy_per_sample": [...]} (keys starting with '_' are comments). */
static enum px_err parse_profile(struct jp *p, json_t *v, const char *path,
				 struct jobspec_profile *ret)
{
	struct jobspec_profile pr;
	double w[JOBSPEC_PROFILE_MAX];
	int nw = 0, ns = 0, na = 0;
	const char *k;
	json_t *x;
	char sub[160];
	enum px_err r = PX_OK;

	memset(&pr, 0, sizeof pr);
	if (!json_is_object(v))
		return jp_fail(p, path, "must be an object {\"workers\", "
			       "\"samples_per_s\", \"accuracy_per_sample\"} "
			       "or a file name");
	json_object_foreach(v, k, x) {
		snprintf(sub, sizeof sub, "%s.%s", path, k);
		if (!strcmp(k, "workers"))
			r = get_nums(p, x, sub, 10000, w, &nw);
		else if (!strcmp(k, "samples_per_s"))
			r = get_nums(p, x, sub, 1e12, pr.samples_per_s, &ns);
		else if (!strcmp(k, "accuracy_per_sample"))
			r = get_nums(p, x, sub, 1, pr.accuracy_per_sample, &na);
		else if (k[0] != '_')
			r = jp_fail(p, sub, "unknown field");
		if (r != PX_OK)
			return r;
	}
	if (!nw || !ns || !na)
		return jp_fail(p, path, "needs workers, samples_per_s and "
			       "accuracy_per_sample");
	if (ns != nw || na != nw)
		return jp_fail(p, path, "workers, samples_per_s and "
			       "accuracy_per_sample must have as many entries "
			       "(%d, %d, %d)", nw, ns, na);
	for (int i = 0; i < nw; i++) {
		snprintf(sub, sizeof sub, "%s.workers[%d]", path, i);
		if (w[i] != floor(w[i]) || (i == 0 && w[i] != 1) ||
		    (i > 0 && w[i] <= w[i - 1]))
			return jp_fail(p, sub, "workers must be whole numbers, "
				       "increasing, starting at 1");
		pr.workers[i] = (int)w[i];
	}
	pr.n = nw;
	profile_derive(&pr);
	*ret = pr;
	return PX_OK;
}

static enum px_err get_list(struct jp *p, json_t *v, const char *path,
			    size_t max, char (*out)[JOBSPEC_NAME_MAX],
			    size_t *ret_n, bool types)
{
	char sub[128];
	size_t i;
	json_t *x;
	enum px_err r;

	if (!json_is_array(v))
		return jp_fail(p, path, "must be an array of strings");
	if (json_array_size(v) > max)
		return jp_fail(p, path, "more than %zu entries", max);
	json_array_foreach(v, i, x) {
		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (types)
			r = get_type(p, x, sub, out[i], JOBSPEC_NAME_MAX);
		else
			r = get_string(p, x, sub, out[i], JOBSPEC_NAME_MAX);
		if (r != PX_OK)
			return r;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(out[j], out[i]))
				return jp_fail(p, sub, "'%s' listed twice",
					       out[i]);
	}
	*ret_n = json_array_size(v);
	return PX_OK;
}

static enum px_err parse_reliable(struct jp *p, json_t *v, struct jobspec *j)
{
	const char *k;
	json_t *x;
	enum px_err r = PX_OK;

	if (!json_is_object(v))
		return jp_fail(p, "reliable", "must be an object "
			       "{\"type\", \"count\"}");
	json_object_foreach(v, k, x) {
		if (!strcmp(k, "type"))
			r = get_type(p, x, "reliable.type", j->reliable.type,
				     sizeof j->reliable.type);
		else if (!strcmp(k, "count"))
			r = get_int(p, x, "reliable.count", 0, 10000,
				    &j->reliable.count);
		else if (k[0] != '_')
			r = jp_fail(p, "reliable", "unknown field '%s'", k);
		if (r != PX_OK)
			return r;
	}
	if (!j->reliable.type[0])
		return jp_fail(p, "reliable.type", "missing");
	if (j->reliable.count < 0)
		return jp_fail(p, "reliable.count", "missing");
	return PX_OK;
}

static enum px_err parse_spot(struct jp *p, json_t *v, struct jobspec *j)
{
	const char *k;
	json_t *x;
	enum px_err r = PX_OK;
	bool have_types = false;
	size_t rl = strlen(j->region);

	if (!json_is_object(v))
		return jp_fail(p, "spot", "must be an object "
			       "{\"types\", \"zones\", \"max_instances\"}");
	json_object_foreach(v, k, x) {
		if (!strcmp(k, "types")) {
			r = get_list(p, x, "spot.types", JOBSPEC_TYPES_MAX,
				     j->spot.types, &j->spot.n_types, true);
			have_types = true;
		} else if (!strcmp(k, "zones")) {
			r = get_list(p, x, "spot.zones", JOBSPEC_ZONES_MAX,
				     j->spot.zones, &j->spot.n_zones, false);
		} else if (!strcmp(k, "max_instances")) {
			r = get_int(p, x, "spot.max_instances", 0, 10000,
				    &j->spot.max_instances);
		} else if (k[0] != '_') {
			r = jp_fail(p, "spot", "unknown field '%s'", k);
		}
		if (r != PX_OK)
			return r;
	}
	if (!have_types || j->spot.n_types == 0)
		return jp_fail(p, "spot.types", "missing or empty");
	if (j->spot.max_instances < 0)
		return jp_fail(p, "spot.max_instances", "missing");
	for (size_t i = 0; i < j->spot.n_zones; i++) {
		const char *z = j->spot.zones[i];
		char sub[64];
		snprintf(sub, sizeof sub, "spot.zones[%zu]", i);
		if (rl && (strncmp(z, j->region, rl) || !z[rl]))
			return jp_fail(p, sub, "zone '%s' is not in region "
				       "'%s'", z, j->region);
	}
	return PX_OK;
}

/* Parse the top-level object.  The region is read first so that zones can
 * be checked against it. */
static enum px_err parse_root(struct jp *p, json_t *root, struct jobspec *j)
{
	const char *k;
	json_t *x;
	enum px_err r = PX_OK;
	double budget = -1;
	static const char *const required[] = {
		"name", "region", "work_hours", "reference_type", "instances",
		"reliable", "spot",
	};

	if (!json_is_object(root))
		return px_errorf(p->err, PX_EINVAL,
				 "%s: the job spec must be a JSON object",
				 p->name);
	for (size_t i = 0; i < sizeof required / sizeof *required; i++)
		if (!json_object_get(root, required[i]))
			return jp_fail(p, required[i], "missing");
	r = get_string(p, json_object_get(root, "region"), "region",
		       j->region, sizeof j->region);
	if (r != PX_OK)
		return r;
	json_object_foreach(root, k, x) {
		if (!strcmp(k, "name"))
			r = get_string(p, x, "name", j->name, sizeof j->name);
		else if (!strcmp(k, "region"))
			r = PX_OK;
		else if (!strcmp(k, "work_hours"))
			r = get_num(p, x, k, JOBSPEC_HOURS_MIN, false, 1e7,
				    &j->work_hours);
		else if (!strcmp(k, "reference_type"))
			r = get_type(p, x, k, j->reference_type,
				     sizeof j->reference_type);
		else if (!strcmp(k, "instances"))
			r = get_int(p, x, k, 1, 10000, &j->instances);
		else if (!strcmp(k, "reliable"))
			r = parse_reliable(p, x, j);
		else if (!strcmp(k, "spot"))
			r = parse_spot(p, x, j);
		else if (!strcmp(k, "speed"))
			r = get_type_map(p, x, k, JOBSPEC_SPEED_MIN, 1000,
					 j->speed, &j->n_speed, NULL);
		else if (!strcmp(k, "scaling_efficiency"))
			r = get_num(p, x, k, JOBSPEC_EFFICIENCY_MIN, false, 1,
				    &j->scaling_efficiency);
		else if (!strcmp(k, "startup_seconds"))
			r = get_int(p, x, k, 0, 86400, &j->startup_seconds);
		else if (!strcmp(k, "clock_seconds"))
			r = get_int(p, x, k, 0, 86400, &j->clock_seconds);
		else if (!strcmp(k, "warning_seconds"))
			r = get_int(p, x, k, 0, 3600, &j->warning_seconds);
		else if (!strcmp(k, "tick_seconds"))
			r = get_int(p, x, k, 60, 86400, &j->tick_seconds);
		else if (!strcmp(k, "restart_seconds"))
			r = get_num(p, x, k, 0, false, JOBSPEC_RESTART_MAX,
				    &j->restart_seconds);
		else if (!strcmp(k, "budget_usd"))
			r = get_num(p, x, k, JOBSPEC_BUDGET_MIN, false, 1e9,
				    &budget);
		else if (!strcmp(k, "deadline_hours"))
			r = get_num(p, x, k, JOBSPEC_HOURS_MIN, false, 1e6,
				    &j->deadline_hours);
		else if (!strcmp(k, "finish_by_hours"))
			r = get_num(p, x, k, JOBSPEC_HOURS_MIN, false, 1e6,
				    &j->finish_by_hours);
		else if (!strcmp(k, "interruption_rates"))
			r = get_type_map(p, x, k, 0, 100, j->rate, &j->n_rate,
					 &j->rate_default);
		else if (!strcmp(k, "interruption_pool_share"))
			r = get_num(p, x, k, 0, true, 1, &j->pool_share);
		else if (!strcmp(k, "spot_advisor"))
			r = get_string(p, x, k, j->spot_advisor,
				       sizeof j->spot_advisor);
		else if (!strcmp(k, "scaling_profile") && json_is_string(x))
			r = get_string(p, x, k, j->profile_path,
				       sizeof j->profile_path);
		else if (!strcmp(k, "scaling_profile"))
			r = parse_profile(p, x, k, &j->profile);
		else if (k[0] != '_')
			r = jp_fail(p, k, "unknown field");
		if (r != PX_OK)
			return r;
	}
	if (budget > 0)
		j->budget_uusd = llround(budget * 1e6);
	if ((j->profile.n || j->profile_path[0]) &&
	    json_object_get(root, "scaling_efficiency"))
		return jp_fail(p, "scaling_profile", "give scaling_profile or "
			       "scaling_efficiency, not both");
	return PX_OK;
}

enum px_err jobspec_parse(const char *buf, size_t len, const char *name,
			  struct jobspec *ret, struct px_error *err)
{
	struct jp p = {.name = name, .err = err};
	struct jobspec *j;
	json_error_t je;
	json_t *root;
	enum px_err r;

	if (len > JOBSPEC_FILE_MAX)
		return px_errorf(err, PX_ETOOBIG, "%s: larger than %d bytes",
				 name, JOBSPEC_FILE_MAX);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return px_errorf(err, PX_EINVAL, "%s: line %d column %d: %s",
				 name, je.line, je.column, je.text);
	j = px_calloc(1, sizeof *j);
	if (!j) {
		json_decref(root);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	j->reliable.count = -1;
	j->spot.max_instances = -1;
	j->scaling_efficiency = 0.9;
	j->startup_seconds = 120;
	j->clock_seconds = 60;
	j->warning_seconds = 120;
	j->tick_seconds = 600;
	j->budget_uusd = -1;
	j->rate_default = -1;
	j->pool_share = JOBSPEC_POOL_SHARE;
	r = parse_root(&p, root, j);
	json_decref(root);
	if (r == PX_OK)
		*ret = *j;
	free(j);
	return r;
}

enum px_err jobspec_load(const char *path, struct jobspec *ret,
			 struct px_error *err)
{
	char *buf;
	size_t n;
	enum px_err r;

	r = px_read_file(path, JOBSPEC_FILE_MAX, &buf, &n, err);
	if (r != PX_OK)
		return r;
	r = jobspec_parse(buf, n, path, ret, err);
	free(buf);
	return r;
}

double jobspec_speed(const struct jobspec *j, const char *type)
{
	const struct inst_type *t, *ref;

	for (size_t i = 0; i < j->n_speed; i++)
		if (!strcmp(j->speed[i].type, type))
			return j->speed[i].v;
	t = inst_find(type);
	ref = inst_find(j->reference_type);
	if (!t || !ref || ref->vcpus <= 0)
		return 0;
	return (double)t->vcpus / ref->vcpus;
}

double jobspec_ondemand_hours(const struct jobspec *j,
			      const struct jobspec_profile *p)
{
	double rate = jobspec_rate(j, p, j->instances, j->instances *
				   jobspec_speed(j, j->reference_type));

	if (!(rate > 0))
		return INFINITY;
	/* whole seconds, as the simulator's clock counts them */
	return (j->startup_seconds +
		ceil(j->work_hours * 3600 / rate - 1e-6)) / 3600;
}

bool jobspec_finish_feasible(const struct jobspec *j,
			     const struct jobspec_profile *p,
			     double *ret_need)
{
	double need;

	if (!(j->finish_by_hours > 0))
		return true;
	need = jobspec_ondemand_hours(j, p);
	if (need <= j->finish_by_hours)
		return true;
	*ret_need = need;
	return false;
}

double jobspec_interrupt_rate(const struct jobspec *j, const char *type)
{
	const struct inst_type *t;

	for (size_t i = 0; i < j->n_rate; i++)
		if (!strcmp(j->rate[i].type, type))
			return j->rate[i].v;
	if (j->rate_default >= 0)
		return j->rate_default;
	t = inst_find(type);
	return t ? t->interrupt_per_h : 0;
}

/* Efficiency of n >= 1 instances under profile pr: a fitted profile's
 * model (1 / (1 + serial (n - 1)), serial >= 0, so at most 1 and
 * extrapolated by the model itself); else eff at the measured points,
 * log-linear in log2(n) between them, and beyond the last point the last
 * interval's factor per doubling (the first point's, 1, below two
 * points); at most 1. */
static double profile_eff(const struct jobspec_profile *pr, int n)
{
	const double *le = pr->log_eff, *lw = pr->log2_workers;
	double e;
	int k;

	if (pr->fitted)
		return 1 / (1 + pr->serial * (n - 1));
	if (pr->n == 1)
		return 1;
	for (k = 1; k < pr->n - 1 && pr->workers[k] < n; k++)
		;
	/* the interval [k-1, k] holds n, or is the last one */
	e = exp(le[k - 1] + (le[k] - le[k - 1]) *
		(log2((double)n) - lw[k - 1]) / (lw[k] - lw[k - 1]));
	return e < 1 ? e : 1;
}

/* e^log2(n), remembered per thread for the last e and n < 256: the
 * policies ask for it at every candidate fleet size, and pow was 7% of
 * BidBrain's time in simulate.  The same pow call fills the table, so the
 * answers are bit for bit those of calling it. */
static double flat_eff(double e, int n)
{
	static __thread double memo_e = -1, memo[256];

	if (n >= 256)
		return pow(e, log2((double)n));
	if (e != memo_e) {
		for (int i = 0; i < 256; i++)
			memo[i] = 0;
		memo_e = e;
	}
	if (memo[n] == 0)
		memo[n] = pow(e, log2((double)n));
	return memo[n];
}

double jobspec_rate(const struct jobspec *j, const struct jobspec_profile *p,
		    int n, double speed_sum)
{
	if (!p)
		p = &j->profile;
	if (n <= 0)
		return 0;
	if (p->n > 0)
		return n == 1 ? speed_sum : speed_sum * profile_eff(p, n);
	if (n == 1 || j->scaling_efficiency >= 1)
		return speed_sum;
	return speed_sum * flat_eff(j->scaling_efficiency, n);
}

double jobspec_fleet_rate(const struct jobspec *j, int n, double speed_sum)
{
	return jobspec_rate(j, NULL, n, speed_sum);
}

enum px_err jobspec_profile_load(const char *path, struct jobspec *j,
				 struct px_error *err)
{
	struct jp p = {.name = path, .err = err};
	json_error_t je;
	json_t *root;
	char *buf;
	size_t n;
	enum px_err r;

	r = px_read_file(path, JOBSPEC_FILE_MAX, &buf, &n, err);
	if (r != PX_OK)
		return r;
	root = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	if (!root)
		return px_errorf(err, PX_EINVAL, "%s: line %d column %d: %s",
				 path, je.line, je.column, je.text);
	r = parse_profile(&p, root, "scaling_profile", &j->profile);
	json_decref(root);
	return r;
}
