/* ratings.c -- the matrix factorization's ratings reader (ratings.h):
 * user,item,rating lines, plain or gzip, into a struct mf_set.
 */
#include "ratings.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dataset.h"

#define MF_LINE_MAX 4096u  /* bytes in a ratings line */
#define MF_GROW 65536u     /* ratings the array first holds */

/* ---- the ratings file ---- */

/* An id: decimal digits only, at most MF_MAX_ID. */
static bool parse_id(const char *s, uint32_t *ret)
{
	unsigned long long v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > MF_MAX_ID)
			return false;
	}
	*ret = (uint32_t)v;
	return true;
}

/* s without the blanks around it, in place. */
static char *trim(char *s)
{
	char *e;

	s += strspn(s, " \t");
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* Split s at commas into f[0..max); the number of fields (max + 1 when
 * there are more). */
static uint32_t split(char *s, char **f, uint32_t max)
{
	uint32_t n = 0;

	for (;;) {
		char *c = strchr(s, ',');

		if (n == max)
			return max + 1;
		if (c)
			*c = '\0';
		f[n++] = trim(s);
		if (!c)
			return n;
		s = c + 1;
	}
}

static enum px_err push(struct mf_set *s, uint32_t *cap,
			const struct mf_rating *r, struct px_error *err)
{
	if (s->n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : MF_GROW;
		struct mf_rating *p;

		if (nc > MF_MAX_RATINGS)
			nc = MF_MAX_RATINGS;
		p = realloc(s->r, (size_t)nc * sizeof(*p));
		if (!p)
			return px_errorf(err, PX_ENOMEM, "%u ratings", nc);
		s->r = p;
		*cap = nc;
	}
	s->r[s->n++] = *r;
	return PX_OK;
}

/* One line (not blank) into *r: "user,item,rating" and maybe a fourth
 * field (MovieLens's timestamp), ignored; with pairs "user,item" is a
 * line too (its rating 0).  *fields: the count of the file's first
 * rating, which every line must have.  *ret_header: line 1 was a
 * header. */
static enum px_err rating_line(const char *path, unsigned long long line,
			       char *s, bool pairs, uint32_t *fields,
			       struct mf_rating *r, bool *ret_header,
			       struct px_error *err)
{
	static const char *const name[] = { "user", "item", "rating" };
	char *f[4];
	uint32_t n = split(s, f, 4);
	const char *why;

	*ret_header = false;
	if (line == 1 && n >= 1 && !(f[0][0] >= '0' && f[0][0] <= '9') &&
	    f[0][0] != '-' && f[0][0] != '+') {
		*ret_header = true;
		return PX_OK;
	}
	if (n < (pairs ? 2u : 3u) || n > 4)
		return px_errorf(err, PX_EINVAL, "%s:%llu: %u field%s, not "
				 "user,item%s (and maybe a timestamp)",
				 path, line, n > 4 ? 5 : n, n == 1 ? "" : "s",
				 pairs ? "[,rating]" : ",rating");
	if (*fields && n != *fields)
		return px_errorf(err, PX_EINVAL, "%s:%llu: %u fields, the "
				 "first rating had %u", path, line, n,
				 *fields);
	*fields = n;
	for (uint32_t k = 0; k < 2; k++)
		if (!parse_id(f[k], k ? &r->item : &r->user))
			return px_errorf(err, PX_EINVAL, "%s:%llu: field %u "
					 "(%s): '%.40s' is not an id (an "
					 "integer in 0..%u)", path, line,
					 k + 1, name[k], f[k], MF_MAX_ID);
	r->r = 0.0f;
	if (n == 2)
		return PX_OK;
	why = data_parse_float(f[2], &r->r);
	if (!why && fabsf(r->r) > (float)MF_RATING_MAX)
		why = "beyond the bound of 1e6";
	if (why)
		return px_errorf(err, PX_EINVAL, "%s:%llu: field 3 (%s): "
				 "'%.40s': %s", path, line, name[2], f[2],
				 why);
	return PX_OK;
}

static enum px_err read_lines(gzFile gz, const char *path, uint32_t max_n,
			      bool pairs, struct mf_set *s, char *buf,
			      bool *ret_rated, struct px_error *err)
{
	unsigned long long line = 0;
	uint32_t cap = 0, fields = 0;
	double sum = 0.0;
	enum px_err e;
	int zerr;

	while (!max_n || s->n < max_n) {
		struct mf_rating r;
		bool header;
		size_t n;
		z_off_t at = gztell(gz);

		if (!gzgets(gz, buf, MF_LINE_MAX + 2)) {
			const char *m = gzerror(gz, &zerr);

			if (zerr != Z_OK)
				return px_errorf(err, PX_EINVAL, "%s:%llu: %s",
						 path, line + 1,
						 m ? m : "gzip error");
			break;
		}
		line++;
		n = strlen(buf);
		/* a NUL byte is bad text, and a file of them (sparse) is
		 * not read whole as blank lines */
		if ((uint64_t)(gztell(gz) - at) != n)
			return px_errorf(err, PX_EINVAL, "%s:%llu: a NUL byte "
					 "(at byte %zu of the line): not a "
					 "text file", path, line, n + 1);
		if (n && buf[n - 1] == '\n')
			buf[--n] = '\0';
		else if (n > MF_LINE_MAX)
			return px_errorf(err, PX_ETOOBIG, "%s:%llu: a line "
					 "longer than %u bytes", path, line,
					 MF_LINE_MAX);
		if (n && buf[n - 1] == '\r')
			buf[--n] = '\0';
		if (buf[strspn(buf, " \t")] == '\0')
			continue;
		e = rating_line(path, line, buf, pairs, &fields, &r, &header,
				err);
		if (e != PX_OK)
			return e;
		if (header)
			continue;
		if (s->n == MF_MAX_RATINGS)
			return px_errorf(err, PX_ETOOBIG, "%s:%llu: more than "
					 "%u ratings", path, line,
					 MF_MAX_RATINGS);
		e = push(s, &cap, &r, err);
		if (e != PX_OK)
			return e;
		sum += r.r;
		if (r.user >= s->n_users)
			s->n_users = r.user + 1;
		if (r.item >= s->n_items)
			s->n_items = r.item + 1;
	}
	if (!s->n)
		return px_errorf(err, PX_EINVAL, "%s: no ratings (an empty "
				 "file, or a header alone)", path);
	s->mean = sum / s->n;
	*ret_rated = fields >= 3;
	return PX_OK;
}

static enum px_err load(const char *path, uint32_t max_n, bool pairs,
			struct mf_set *ret, bool *ret_rated,
			struct px_error *err)
{
	struct mf_set s = { 0 };
	char *buf = malloc(MF_LINE_MAX + 2);
	gzFile gz = NULL;
	enum px_err e;
	int fd;

	memset(ret, 0, sizeof(*ret));
	if (!buf)
		return px_errorf(err, PX_ENOMEM, "a line buffer");
	fd = px_open_input(path, err);
	if (fd < 0) {
		free(buf);
		return err && err->code ? err->code : PX_EIO;
	}
	gz = gzdopen(fd, "rb");
	if (!gz) {
		close(fd);
		free(buf);
		return px_errorf(err, PX_ENOMEM, "file '%s': cannot start "
				 "zlib", path);
	}
	e = read_lines(gz, path, max_n, pairs, &s, buf, ret_rated, err);
	gzclose(gz);
	free(buf);
	if (e != PX_OK) {
		mf_set_release(&s);
		return e;
	}
	*ret = s;
	return PX_OK;
}

enum px_err mf_load(const char *path, uint32_t max_n, struct mf_set *ret,
		    struct px_error *err)
{
	bool rated;

	return load(path, max_n, false, ret, &rated, err);
}

enum px_err mf_check(const char *path, struct px_error *err)
{
	struct mf_set s;
	enum px_err e = mf_load(path, MF_CHECK_RATINGS, &s, err);

	mf_set_release(&s);
	return e;
}

enum px_err mf_check_rank(const char *path, uint32_t rank,
			  struct px_error *err)
{
	struct mf_set s;
	struct mf_desc d;
	enum px_err e = mf_load(path, MF_CHECK_RATINGS, &s, err);

	/* the matrices only grow with the ratings after: too big for
	 * MF_MAX_PARAMS already is too big */
	if (e == PX_OK && rank) {
		e = mf_desc_init(&d, s.n_users, s.n_items, rank, s.mean, err);
		if (e != PX_OK)
			px_error_prefix(err, "%s: ", path);
	}
	mf_set_release(&s);
	return e;
}

enum px_err mf_load_pairs(const char *path, uint32_t max_n,
			  struct mf_set *ret, bool *ret_rated,
			  struct px_error *err)
{
	return load(path, max_n, true, ret, ret_rated, err);
}
