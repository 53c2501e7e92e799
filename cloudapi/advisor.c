/* advisor.c -- the Spot Instance Advisor's buckets as hazards (advisor.h). */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "advisor.h"

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct advisor_entry *)a)->type,
		      ((const struct advisor_entry *)b)->type);
}

/* "ranges": [{"index": i, "max": pct, ...}, ...] in index order. */
static enum px_err parse_ranges(json_t *r, const char *name, struct advisor *a,
				struct px_error *err)
{
	size_t i;
	json_t *x;

	if (!json_is_array(r) || json_array_size(r) == 0 ||
	    json_array_size(r) > ADVISOR_BUCKETS_MAX)
		return px_errorf(err, PX_EINVAL, "%s: ranges: an array of 1 "
				 "to %d buckets is needed", name,
				 ADVISOR_BUCKETS_MAX);
	json_array_foreach(r, i, x) {
		json_t *idx = json_object_get(x, "index");
		json_t *max = json_object_get(x, "max");
		double m = json_is_number(max) ? json_number_value(max) : -1;

		if (!json_is_integer(idx) || json_integer_value(idx) !=
		    (json_int_t)i)
			return px_errorf(err, PX_EINVAL, "%s: ranges[%zu]."
					 "index: %zu expected", name, i, i);
		if (!(m > 0 && m <= 100) ||
		    (i > 0 && m <= a->bucket_max_pct[i - 1]))
			return px_errorf(err, PX_EINVAL, "%s: ranges[%zu].max: "
					 "a percentage above the previous "
					 "bucket's, at most 100", name, i);
		a->bucket_max_pct[i] = m;
	}
	a->n_buckets = (int)json_array_size(r);
	return PX_OK;
}

static enum px_err parse_types(json_t *o, const char *name, struct advisor *a,
			       struct px_error *err)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	a->v = px_calloc(json_object_size(o) ? json_object_size(o) : 1,
			 sizeof *a->v);
	if (!a->v)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	json_object_foreach(o, k, v) {
		json_t *r = json_object_get(v, "r"), *s = json_object_get(v,
								      "s");
		struct advisor_entry *e = &a->v[n];

		if (!json_is_object(v))
			return px_errorf(err, PX_EINVAL, "%s: spot_advisor.%s."
					 "Linux.%.40s: an object {\"r\", \"s\"} "
					 "is needed", name, a->region, k);
		if (strlen(k) == 0 || strlen(k) >= ADVISOR_TYPE_MAX)
			return px_errorf(err, PX_EINVAL, "%s: type '%.40s': "
					 "1 to %d bytes", name, k,
					 ADVISOR_TYPE_MAX - 1);
		for (const char *p = k; *p; p++)
			if (*p <= 0x20 || *p == 0x7f)
				return px_errorf(err, PX_EINVAL, "%s: a type "
						 "name has a control or blank "
						 "character", name);
		if (!json_is_integer(r) || json_integer_value(r) < 0 ||
		    json_integer_value(r) >= a->n_buckets)
			return px_errorf(err, PX_EINVAL, "%s: spot_advisor.%s."
					 "Linux.%s.r: a bucket index from 0 to "
					 "%d is needed", name, a->region, k,
					 a->n_buckets - 1);
		if (s && !(json_is_integer(s) && json_integer_value(s) >= 0 &&
			   json_integer_value(s) <= 100))
			return px_errorf(err, PX_EINVAL, "%s: spot_advisor.%s."
					 "Linux.%s.s: a percentage is needed",
					 name, a->region, k);
		snprintf(e->type, sizeof e->type, "%s", k);
		e->bucket = (int)json_integer_value(r);
		e->saving_pct = s ? (int)json_integer_value(s) : 0;
		n++;
	}
	a->n = n;
	qsort(a->v, n, sizeof *a->v, cmp_entry);
	return PX_OK;
}

enum px_err advisor_parse(const char *buf, size_t len, const char *name,
			  const char *region, struct advisor *ret,
			  struct px_error *err)
{
	json_error_t je;
	json_t *root, *types;
	enum px_err e;

	memset(ret, 0, sizeof *ret);
	snprintf(ret->name, sizeof ret->name, "%s", name);
	if (strlen(region) >= sizeof ret->region)
		return px_errorf(err, PX_EINVAL, "region '%.40s' is too long",
				 region);
	snprintf(ret->region, sizeof ret->region, "%s", region);
	if (len > ADVISOR_FILE_MAX)
		return px_errorf(err, PX_ETOOBIG, "%s: more than %d bytes",
				 name, ADVISOR_FILE_MAX);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return px_errorf(err, PX_EINVAL, "%s:%d:%d: %s", name, je.line,
				 je.column, je.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return px_errorf(err, PX_EINVAL, "%s: not a JSON object",
				 name);
	}
	e = parse_ranges(json_object_get(root, "ranges"), name, ret, err);
	types = json_object_get(json_object_get(json_object_get(root,
		"spot_advisor"), region), "Linux");
	if (e == PX_OK && !json_is_object(types))
		e = px_errorf(err, PX_ENOENT, "%s: spot_advisor.%s.Linux: no "
			      "entries for the region", name, region);
	if (e == PX_OK)
		e = parse_types(types, name, ret, err);
	json_decref(root);
	if (e != PX_OK)
		advisor_release(ret);
	return e;
}

enum px_err advisor_load(const char *path, const char *region,
			 struct advisor *ret, struct px_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	enum px_err e = px_read_file(path, ADVISOR_FILE_MAX, &buf, &len, err);

	if (e == PX_OK)
		e = advisor_parse(buf, len, path, region, ret, err);
	free(buf);
	return e;
}

void advisor_release(struct advisor *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

const struct advisor_entry *advisor_find(const struct advisor *a,
					 const char *type)
{
	struct advisor_entry key;

	if (!a->n || strlen(type) >= sizeof key.type)
		return NULL;
	snprintf(key.type, sizeof key.type, "%s", type);
	return bsearch(&key, a->v, a->n, sizeof *a->v, cmp_entry);
}

double advisor_share(const struct advisor *a, int b)
{
	double lo, hi;

	if (b < 0 || b >= a->n_buckets)
		return 0;
	if (b == a->n_buckets - 1 && a->bucket_max_pct[b] >= 100)
		return ADVISOR_TOP_SHARE;
	lo = b ? a->bucket_max_pct[b - 1] : 0;
	hi = a->bucket_max_pct[b];
	return (lo + hi) / 200.0;
}

double advisor_hazard(const struct advisor *a, int b)
{
	return -log(1 - advisor_share(a, b)) / ADVISOR_LIFE_H;
}

/* YYYY-MM of a snapshot file name linux_YYYY-MM.json as months since
 * year 0; -1 when the name is not one. */
static long snap_month(const char *name)
{
	int y, m, n = 0;

	if (sscanf(name, "linux_%4d-%2d.json%n", &y, &m, &n) != 2 ||
	    name[n] || strlen(name) != 18 || m < 1 || m > 12)
		return -1;
	return y * 12L + m - 1;
}

enum px_err advisor_pick(const char *dir, int64_t t_s, char *buf, size_t len,
			 struct px_error *err)
{
	struct dirent *de;
	char when[32];
	long want, best = -1, first = -1;
	char best_name[sizeof de->d_name] = "";
	char first_name[sizeof de->d_name] = "";
	DIR *d = opendir(dir);

	if (!d)
		return px_errorf(err, PX_ENOENT, "no spot advisor snapshots "
				 "in '%s'", dir);
	px_format_time(t_s, when, sizeof when);
	want = strtol(when, NULL, 10) * 12 + strtol(when + 5, NULL, 10) - 1;
	while ((de = readdir(d))) {
		long m = snap_month(de->d_name);

		if (m < 0)
			continue;
		if (m <= want && m > best) {
			best = m;
			snprintf(best_name, sizeof best_name, "%s", de->d_name);
		}
		if (first < 0 || m < first) {
			first = m;
			snprintf(first_name, sizeof first_name, "%s",
				 de->d_name);
		}
	}
	closedir(d);
	if (first < 0)
		return px_errorf(err, PX_ENOENT, "no spot advisor snapshot "
				 "(linux_YYYY-MM.json) in '%s'", dir);
	if ((size_t)snprintf(buf, len, "%s/%s", dir, best >= 0 ? best_name :
			     first_name) >= len)
		return px_errorf(err, PX_EINVAL, "path too long: '%s'", dir);
	return PX_OK;
}

enum px_err advisor_shipped(int64_t t_s, char *buf, size_t len,
			    struct px_error *err)
{
	static const char *const cands[] = {
		"../share/proteus/spot-advisor", "../etc/spot-advisor",
		"../../etc/spot-advisor", NULL,
	};
	char exe[4096], dir[4096];

	px_exe_dir(exe, sizeof exe);
	for (const char *const *c = cands; *c; c++) {
		struct stat sb;

		if ((size_t)snprintf(dir, sizeof dir, "%s/%s", exe, *c) <
			    sizeof dir &&
		    stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
			return advisor_pick(dir, t_s, buf, len, err);
	}
	return px_errorf(err, PX_ENOENT, "no shipped spot advisor snapshots "
			 "beside %s (etc/spot-advisor; make install puts them "
			 "in PREFIX/share/proteus/spot-advisor): name a "
			 "snapshot, or give the job's interruption_rates", exe);
}
