/* mf.c -- matrix factorization: the ratings reader, the model and its
 * sparse minibatch gradient (mf.h).
 */
#include "mf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dataset.h"
#include "kern.h"

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

void mf_set_release(struct mf_set *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}

/* ---- the model ---- */

enum px_err mf_desc_init(struct mf_desc *d, uint32_t n_users,
			 uint32_t n_items, uint32_t rank, double mean,
			 struct px_error *err)
{
	uint64_t rows = (uint64_t)n_users + n_items;

	memset(d, 0, sizeof(*d));
	if (rank < 1 || rank > MF_MAX_RANK)
		return px_errorf(err, PX_EINVAL, "rank %u, not in 1..%u", rank,
				 MF_MAX_RANK);
	if (!n_users || !n_items || n_users > MF_MAX_ID + 1 ||
	    n_items > MF_MAX_ID + 1)
		return px_errorf(err, PX_EINVAL, "%u users and %u items: each "
				 "must be in 1..%u", n_users, n_items,
				 MF_MAX_ID + 1);
	if (rows * (rank + 1) > MF_MAX_PARAMS)
		return px_errorf(err, PX_ETOOBIG, "%u users and %u items of "
				 "rank %u are %llu parameters, over %u",
				 n_users, n_items, rank,
				 (unsigned long long)(rows * (rank + 1)),
				 MF_MAX_PARAMS);
	if (!isfinite(mean))
		return px_errorf(err, PX_EINVAL, "the mean rating is not "
				 "finite");
	d->rank = rank;
	d->row = rank + 1;
	d->n_users = n_users;
	d->n_items = n_items;
	d->n_params = (size_t)rows * d->row;
	d->mean = (float)mean;
	return PX_OK;
}

void mf_init_params(const struct mf_desc *d, float *params, uint64_t seed)
{
	struct kern_rng rng;
	size_t rows = (size_t)d->n_users + d->n_items;

	kern_rng_seed(&rng, seed);
	for (size_t k = 0; k < rows; k++) {
		float *p = params + k * d->row;

		for (uint32_t j = 0; j < d->rank; j++)
			p[j] = 0.1f * kern_rng_normal(&rng);
		p[d->rank] = 0.0f;
	}
}

void mf_mark_seen(const struct mf_desc *d, const struct mf_set *train,
		  uint8_t *seen)
{
	memset(seen, 0, (size_t)d->n_users + d->n_items);
	for (uint32_t k = 0; k < train->n; k++) {
		const struct mf_rating *r = &train->r[k];

		if (r->user < d->n_users)
			seen[mf_user_row(d, r->user)] = 1;
		if (r->item < d->n_items)
			seen[mf_item_row(d, r->item)] = 1;
	}
}

void mf_zero_unseen(const struct mf_desc *d, float *params,
		    const uint8_t *seen)
{
	size_t rows = (size_t)d->n_users + d->n_items;

	for (size_t k = 0; k < rows; k++)
		if (!seen[k])
			memset(params + k * d->row, 0, d->row * sizeof(float));
}

float mf_predict(const struct mf_desc *d, const float *params,
		 const uint8_t *seen, uint32_t u, uint32_t i)
{
	bool hu = u < d->n_users && (!seen || seen[mf_user_row(d, u)]);
	bool hi = i < d->n_items && (!seen || seen[mf_item_row(d, i)]);
	const float *p = params + mf_user_row(d, u) * d->row;
	const float *q = params + mf_item_row(d, i) * d->row;
	float y = d->mean;

	if (hu)
		y += p[d->rank];
	if (hi)
		y += q[d->rank];
	if (hu && hi)
		for (uint32_t j = 0; j < d->rank; j++)
			y += p[j] * q[j];
	return y;
}

double mf_rmse(const struct mf_desc *d, const float *params,
	       const uint8_t *seen, const struct mf_set *set)
{
	double sse = 0.0;

	for (uint32_t k = 0; k < set->n; k++) {
		const struct mf_rating *r = &set->r[k];
		double e = (double)r->r - mf_predict(d, params, seen, r->user,
						      r->item);

		sse += e * e;
	}
	return set->n ? sqrt(sse / set->n) : 0.0;
}

/* ---- the sparse gradient ---- */

enum px_err mf_grad_new(const struct mf_desc *d, uint32_t max_batch,
			struct mf_grad **ret, struct px_error *err)
{
	size_t rows = (size_t)d->n_users + d->n_items;
	struct mf_grad *g = calloc(1, sizeof(*g));

	if (max_batch < 1 || max_batch > MODEL_MAX_BATCH) {
		free(g);
		return px_errorf(err, PX_EINVAL, "batch %u, not in 1..%u",
				 max_batch, MODEL_MAX_BATCH);
	}
	if (g) {
		g->cap = 2 * max_batch;
		g->rows = px_calloc(g->cap, sizeof(*g->rows));
		g->g = px_calloc((size_t)g->cap * d->row, sizeof(*g->g));
		g->slot = px_calloc(rows, sizeof(*g->slot));
	}
	if (!g || !g->rows || !g->g || !g->slot) {
		mf_grad_free(g);
		return px_errorf(err, PX_ENOMEM, "the gradient of %u ratings",
				 max_batch);
	}
	memset(g->slot, 0xff, rows * sizeof(*g->slot)); /* -1 */
	*ret = g;
	return PX_OK;
}

void mf_grad_free(struct mf_grad *g)
{
	if (!g)
		return;
	free(g->rows);
	free(g->g);
	free(g->slot);
	free(g);
}

/* Row `row`'s gradient, added to the list (zeroed) when new. */
static float *grad_row(const struct mf_desc *d, struct mf_grad *g,
		       size_t row)
{
	int32_t k = g->slot[row];

	if (k < 0) {
		k = (int32_t)g->n_rows++;
		g->slot[row] = k;
		g->rows[k] = (uint32_t)row;
		memset(g->g + (size_t)k * d->row, 0, d->row * sizeof(float));
	}
	return g->g + (size_t)k * d->row;
}

enum px_err mf_batch_grad(const struct mf_desc *d, const float *params,
			  const struct mf_set *set, const uint32_t *idx,
			  uint32_t n, float lambda, struct mf_grad *g,
			  double *ret_loss, struct px_error *err)
{
	double loss = 0.0;

	if (n > g->cap / 2)
		return px_errorf(err, PX_EINVAL, "a batch of %u ratings, over "
				 "%u", n, g->cap / 2);
	for (uint32_t k = 0; k < n; k++) {
		const struct mf_rating *r = &set->r[idx[k]];
		const float *p, *q;
		float *gp, *gq, e;
		double reg = 0.0;

		if (r->user >= d->n_users || r->item >= d->n_items)
			return px_errorf(err, PX_EINVAL, "rating %u: user %u "
					 "or item %u past the model's %u users "
					 "and %u items", idx[k], r->user,
					 r->item, d->n_users, d->n_items);
		p = params + mf_user_row(d, r->user) * d->row;
		q = params + mf_item_row(d, r->item) * d->row;
		e = r->r - mf_predict(d, params, NULL, r->user, r->item);
		gp = grad_row(d, g, mf_user_row(d, r->user));
		gq = grad_row(d, g, mf_item_row(d, r->item));
		for (uint32_t j = 0; j < d->rank; j++) {
			gp[j] += -e * q[j] + lambda * p[j];
			gq[j] += -e * p[j] + lambda * q[j];
			reg += (double)p[j] * p[j] + (double)q[j] * q[j];
		}
		gp[d->rank] += -e + lambda * p[d->rank];
		gq[d->rank] += -e + lambda * q[d->rank];
		reg += (double)p[d->rank] * p[d->rank] +
		       (double)q[d->rank] * q[d->rank];
		loss += 0.5 * (double)e * e + 0.5 * lambda * reg;
	}
	*ret_loss = loss;
	return PX_OK;
}

void mf_grad_apply(const struct mf_desc *d, float *params,
		   struct mf_grad *g, float lr)
{
	for (uint32_t k = 0; k < g->n_rows; k++) {
		float *p = params + (size_t)g->rows[k] * d->row;
		const float *v = g->g + (size_t)k * d->row;

		for (uint32_t j = 0; j < d->row; j++)
			p[j] -= lr * v[j];
		g->slot[g->rows[k]] = -1;
	}
	g->n_rows = 0;
}
