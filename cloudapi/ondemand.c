/* ondemand.c -- on-demand price tables: a bounded JSON file (jansson) into
 * a sorted array of (region, type, micro-USD per hour).
 */
#include "ondemand.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

/* Largest price accepted, as px_parse_usd: 10^9 USD. */
#define ONDEMAND_USD_MAX INT64_C(1000000000)

/* Convert a JSON number to micro-USD.  Integers are exact.  jansson keeps
 * reals only as the double nearest to the text, so: N = llround(v * 1e6)
 * and accept only when N / 1e6 is that same double.  For |v| <= 10^9 the
 * product's error stays well under 0.5, and two decimals with at most 6
 * places below 10^9 never share a double, so every text with at most 6
 * decimals converts exactly and a text with more is refused (unless the
 * extra digits are beyond a double's precision, as "0.1000000000000000001",
 * which is read as the micro-USD value it cannot be told apart from). */
static enum px_err ondemand_uusd(const json_t *v, int64_t *ret)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0 || i > ONDEMAND_USD_MAX)
			return PX_EINVAL;
		*ret = (int64_t)i * PX_UUSD_PER_USD;
		return PX_OK;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		long long n;

		if (!isfinite(d) || d < 0 || d > (double)ONDEMAND_USD_MAX)
			return PX_EINVAL;
		n = llround(d * 1e6);
		if ((double)n / 1e6 != d)
			return PX_EINVAL;
		*ret = n;
		return PX_OK;
	}
	return PX_EINVAL;
}

static const char *ondemand_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* Check a region or type name: non-empty, bounded, no NUL. */
static bool ondemand_name_ok(const char *s, size_t len)
{
	return len > 0 && len < ONDEMAND_NAME_MAX && !memchr(s, '\0', len) &&
	       px_ctrl_at(s, len) < 0;
}

static int ondemand_cmp(const void *a, const void *b)
{
	const struct ondemand_entry *x = a, *y = b;
	int c = strcmp(x->region, y->region);

	return c ? c : strcmp(x->type, y->type);
}

/* One price: a number, or an object with a "usd_per_hour" number. */
static enum px_err ondemand_price(const json_t *v, const char *name,
				  const char *region, const char *type,
				  int64_t *ret, struct px_error *err)
{
	const json_t *num = v;
	int64_t u;

	if (json_is_object(v)) {
		num = json_object_get(v, "usd_per_hour");
		if (!num)
			return px_errorf(err, PX_EINVAL, "%s: %s.%s: no "
					 "'usd_per_hour'", name, region,
					 type);
	}
	if (!json_is_number(num))
		return px_errorf(err, PX_EINVAL, "%s: %s.%s: price is %s, "
				 "not a number", name, region, type,
				 ondemand_kind(num));
	if (json_number_value(num) < 0)
		return px_errorf(err, PX_EINVAL, "%s: %s.%s: negative price",
				 name, region, type);
	if (ondemand_uusd(num, &u) != PX_OK)
		return px_errorf(err, PX_EINVAL, "%s: %s.%s: price %.17g is "
				 "not a whole number of micro-USD up to 1e9",
				 name, region, type, json_number_value(num));
	*ret = u;
	return PX_OK;
}

enum px_err ondemand_table_parse(const char *buf, size_t len,
				 const char *name, struct ondemand_table *ret,
				 struct px_error *err)
{
	struct ondemand_table t = {NULL, 0};
	size_t cap = 0;
	json_error_t je;
	json_t *root, *types, *pv;
	const char *region, *type;
	size_t rlen, tlen;
	enum px_err rc;

	if (!name)
		name = "buffer";
	if (len > ONDEMAND_FILE_MAX)
		return px_errorf(err, PX_ETOOBIG, "%s: %zu bytes, over the "
				 "limit of %u", name, len, ONDEMAND_FILE_MAX);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return px_errorf(err, PX_EINVAL, "%s: line %d column %d: %s",
				 name, je.line, je.column, je.text);
	if (!json_is_object(root)) {
		rc = px_errorf(err, PX_EINVAL, "%s: top level is %s, not an "
			       "object", name, ondemand_kind(root));
		goto out_free;
	}
	json_object_keylen_foreach(root, region, rlen, types) {
		if (region[0] == '_')
			continue;
		if (!ondemand_name_ok(region, rlen)) {
			char q[PX_TERM_SAFE_LEN(80)];

			rc = px_errorf(err, PX_EINVAL, "%s: region '%s': "
				       "empty, too long or has a NUL or "
				       "control character", name,
				       px_term_safe(region, q, sizeof(q)));
			goto out_free;
		}
		if (!json_is_object(types)) {
			rc = px_errorf(err, PX_EINVAL, "%s: %s: %s, not an "
				       "object of types", name, region,
				       ondemand_kind(types));
			goto out_free;
		}
		json_object_keylen_foreach(types, type, tlen, pv) {
			struct ondemand_entry *e;

			if (type[0] == '_')
				continue;
			if (!ondemand_name_ok(type, tlen)) {
				char q[PX_TERM_SAFE_LEN(80)];

				rc = px_errorf(err, PX_EINVAL, "%s: %s: type "
					       "'%s': empty, too long or has "
					       "a NUL or control character",
					       name, region,
					       px_term_safe(type, q,
							    sizeof(q)));
				goto out_free;
			}
			if (t.n == cap) {
				size_t ncap = cap ? 2 * cap : 64;

				e = px_reallocarray(t.v, ncap, sizeof(*e));
				if (!e) {
					rc = px_errorf(err, PX_ENOMEM, "%s: "
						       "out of memory", name);
					goto out_free;
				}
				t.v = e;
				cap = ncap;
			}
			e = &t.v[t.n];
			memset(e, 0, sizeof(*e));
			memcpy(e->region, region, rlen);
			memcpy(e->type, type, tlen);
			rc = ondemand_price(pv, name, region, type,
					    &e->uusd_per_hour, err);
			if (rc != PX_OK)
				goto out_free;
			t.n++;
		}
	}
	if (t.n > 1)
		qsort(t.v, t.n, sizeof(*t.v), ondemand_cmp);
	json_decref(root);
	*ret = t;
	return PX_OK;
out_free:
	free(t.v);
	json_decref(root);
	return rc;
}

enum px_err ondemand_table_load(const char *path, struct ondemand_table *ret,
				struct px_error *err)
{
	char *buf;
	size_t len;
	enum px_err rc;

	rc = px_read_file(path, ONDEMAND_FILE_MAX, &buf, &len, err);
	if (rc != PX_OK)
		return rc;
	rc = ondemand_table_parse(buf, len, path, ret, err);
	free(buf);
	return rc;
}

static int ondemand_key_cmp(const void *key, const void *elem)
{
	const struct ondemand_entry *k = key, *e = elem;

	return ondemand_cmp(k, e);
}

const struct ondemand_entry *ondemand_table_find(
	const struct ondemand_table *t, const char *region, const char *type)
{
	struct ondemand_entry key;
	size_t rl, tl;

	if (!t || !t->n || !region || !type)
		return NULL;
	rl = strnlen(region, ONDEMAND_NAME_MAX);
	tl = strnlen(type, ONDEMAND_NAME_MAX);
	if (rl >= ONDEMAND_NAME_MAX || tl >= ONDEMAND_NAME_MAX)
		return NULL;
	memcpy(key.region, region, rl + 1);
	memcpy(key.type, type, tl + 1);
	return bsearch(&key, t->v, t->n, sizeof(*t->v), ondemand_key_cmp);
}

void ondemand_table_release(struct ondemand_table *t)
{
	if (!t)
		return;
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
