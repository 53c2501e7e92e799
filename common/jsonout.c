/* jsonout.c -- JSON with the shortest reals (jsonout.h). */
#include "jsonout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void px_json_real(double x, char *buf, size_t len)
{
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
	if (!strpbrk(buf, ".eE") && strlen(buf) + 3 <= len)
		strcat(buf, ".0");
}

int px_json_put(FILE *f, json_t *v)
{
	const char *k;
	char num[40], *s;
	json_t *x;
	size_t i;
	int rc = 0;

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
			fprintf(f, "%s%s:", i++ ? "," : "", s);
			free(s);
			if (px_json_put(f, x) < 0)
				return -1;
		}
		fputc('}', f);
		break;
	case JSON_ARRAY:
		fputc('[', f);
		json_array_foreach(v, i, x) {
			if (i)
				fputc(',', f);
			if (px_json_put(f, x) < 0)
				return -1;
		}
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
	if (ferror(f))
		rc = -1;
	return rc;
}
