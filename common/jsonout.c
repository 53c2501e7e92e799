/* jsonout.c -- JSON with the shortest reals (jsonout.h). */
#include "jsonout.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void px_json_real(double x, char *buf, size_t len)
{
	size_t n;

	if (!isfinite(x)) {
		snprintf(buf, len, "null");
		return;
	}
	/* a whole number as such (100.0, not 1e+02) */
	if (x == floor(x) && fabs(x) < 1e16) {
		snprintf(buf, len, "%.1f", x);
		return;
	}
	/* %.17g always reads back; the first that does wins */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			break;
	}
	/* keep it a real: "100" would read back as an integer */
	n = strlen(buf);
	if (!strpbrk(buf, ".eE") && n + 3 <= len)
		memcpy(buf + n, ".0", 3);
}

/* A newline and depth levels of indent spaces, when indenting. */
static void newline(FILE *f, size_t indent, int depth)
{
	if (!indent)
		return;
	fputc('\n', f);
	for (int i = 0; i < depth * (int)indent; i++)
		fputc(' ', f);
}

static int put(FILE *f, json_t *v, size_t flags, int depth)
{
	size_t indent = flags & JSON_MAX_INDENT;
	bool compact = (flags & JSON_COMPACT) != 0;
	const char *item_sep = compact || indent ? "," : ", ";
	const char *key_sep = compact ? ":" : ": ";
	const char *k;
	char num[40], *s;
	json_t *x;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		fputc('{', f);
		i = 0;
		json_object_foreach(v, k, x) {
			json_t *key = json_string(k);

			s = key ? json_dumps(key, JSON_ENCODE_ANY) : NULL;
			json_decref(key);
			if (!s)
				return -1;
			if (i++)
				fputs(item_sep, f);
			newline(f, indent, depth + 1);
			fprintf(f, "%s%s", s, key_sep);
			free(s);
			if (put(f, x, flags, depth + 1) < 0)
				return -1;
		}
		if (i)
			newline(f, indent, depth);
		fputc('}', f);
		break;
	case JSON_ARRAY:
		fputc('[', f);
		json_array_foreach(v, i, x) {
			if (i)
				fputs(item_sep, f);
			newline(f, indent, depth + 1);
			if (put(f, x, flags, depth + 1) < 0)
				return -1;
		}
		if (json_array_size(v))
			newline(f, indent, depth);
		fputc(']', f);
		break;
	case JSON_REAL:
		px_json_real(json_real_value(v), num, sizeof num);
		fputs(num, f);
		break;
	default:
		s = json_dumps(v, JSON_ENCODE_ANY);
		if (!s)
			return -1;
		fputs(s, f);
		free(s);
		break;
	}
	return 0;
}

int px_json_dumpf(json_t *v, FILE *f, size_t flags)
{
	if (!v || put(f, v, flags, 0) < 0)
		return -1;
	return ferror(f) ? -1 : 0;
}

char *px_json_dumps(json_t *v, size_t flags)
{
	char *s = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&s, &len);
	int rc;

	if (!m)
		return NULL;
	rc = px_json_dumpf(v, m, flags);
	if (fclose(m) != 0 || rc < 0) {
		free(s);
		return NULL;
	}
	return s;
}

int px_json_put(FILE *f, json_t *v)
{
	return px_json_dumpf(v, f, JSON_COMPACT);
}

double px_usd(int64_t uusd)
{
	return (double)uusd / 1e6;
}

double px_usd_round(double usd)
{
	double u;

	if (!isfinite(usd))
		return usd;
	u = round(usd * 1e6);
	/* no "-0.0" */
	return u == 0 ? 0.0 : u / 1e6;
}
