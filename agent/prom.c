/* prom.c -- the Prometheus text exposition format 0.0.4 (prom.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

static bool reserve(struct prom *p, size_t more)
{
	size_t cap = p->cap ? p->cap : 4096;
	char *b;

	if (p->oom)
		return false;
	while (cap - p->len < more + 1) {
		if (cap > ((size_t)-1) / 2)
			goto out_oom;
		cap *= 2;
	}
	if (cap == p->cap)
		return true;
	b = realloc(p->buf, cap);
	if (!b)
		goto out_oom;
	p->buf = b;
	p->cap = cap;
	return true;
out_oom:
	p->oom = true;
	return false;
}

static void put(struct prom *p, const char *s, size_t n)
{
	if (!reserve(p, n))
		return;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

static void puts_(struct prom *p, const char *s)
{
	put(p, s, strlen(s));
}

/* A HELP text escapes backslash and newline; a label value also the
 * double quote. */
static void put_escaped(struct prom *p, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			put(p, "\\\\", 2);
		else if (*s == '\n')
			put(p, "\\n", 2);
		else if (*s == '"' && quote)
			put(p, "\\\"", 2);
		else
			put(p, s, 1);
	}
}

void prom_family(struct prom *p, const char *name, const char *type,
		 const char *help)
{
	puts_(p, "# HELP ");
	puts_(p, name);
	put(p, " ", 1);
	put_escaped(p, help, false);
	puts_(p, "\n# TYPE ");
	puts_(p, name);
	put(p, " ", 1);
	puts_(p, type);
	put(p, "\n", 1);
}

/* The shortest of %.15g and %.17g that reads back as v: integers print
 * as integers, 0.1 as 0.1. */
static void put_value(struct prom *p, double v)
{
	char b[40];

	snprintf(b, sizeof b, "%.15g", v);
	if (strtod(b, NULL) != v)
		snprintf(b, sizeof b, "%.17g", v);
	puts_(p, b);
}

void prom_sample(struct prom *p, const char *name, double v, ...)
{
	const char *k;
	bool first = true;
	va_list ap;

	if (!isfinite(v))
		return;
	puts_(p, name);
	va_start(ap, v);
	while ((k = va_arg(ap, const char *))) {
		const char *val = va_arg(ap, const char *);

		put(p, first ? "{" : ",", 1);
		first = false;
		puts_(p, k);
		put(p, "=\"", 2);
		put_escaped(p, val ? val : "", true);
		put(p, "\"", 1);
	}
	va_end(ap);
	if (!first)
		put(p, "}", 1);
	put(p, " ", 1);
	put_value(p, v == 0 ? 0.0 : v); /* never "-0" */
	put(p, "\n", 1);
}

char *prom_take(struct prom *p, size_t *ret_len)
{
	char *b;

	if (!p->oom && !p->buf)
		(void)reserve(p, 0); /* an empty text */
	if (p->oom) {
		prom_release(p);
		return NULL;
	}
	b = p->buf;
	b[p->len] = '\0';
	*ret_len = p->len;
	*p = (struct prom){0};
	return b;
}

void prom_release(struct prom *p)
{
	free(p->buf);
	*p = (struct prom){0};
}
