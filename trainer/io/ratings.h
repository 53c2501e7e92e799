/* ratings.h -- the matrix factorization's ratings files read into a
 * struct mf_set (mf.h): the I/O half of --model mf, apart from the model
 * so that the compute needs no file reading (docs/trainer.md, "Matrix
 * factorization").
 */
#ifndef PX_RATINGS_H
#define PX_RATINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../common/px.h"
#include "../compute/mf.h"

/* Read a CSV file of user,item,rating lines (plain or .gz): ids
 * integers in 0..MF_MAX_ID, ratings finite numbers with |r| <=
 * MF_RATING_MAX.  A first line that is not a rating (its first field is
 * not a number) is a header; blank lines are skipped.  At most max_n
 * ratings (0: all, bounded by MF_MAX_RATINGS).  Errors name
 * file:line and the field; no rating at all is an error.  Release with
 * mf_set_release. */
enum px_err mf_load(const char *path, uint32_t max_n, struct mf_set *ret,
		    struct px_error *err);
/* Check a ratings file as mf_load does, reading its first
 * MF_CHECK_RATINGS ratings at most (proteusd, at a job's submit:
 * bounded memory and time; a fault further on is the trainer's to
 * find). */
#define MF_CHECK_RATINGS (1u << 20)
enum px_err mf_check(const char *path, struct px_error *err);
/* mf_check, and that the matrices of rank for the ids of those ratings
 * fit MF_MAX_PARAMS (the bound that holds: any count fits the frames,
 * the coordinator cuts as many shards as it takes); rank 0: not
 * checked.  An error names path and the bound. */
enum px_err mf_check_rank(const char *path, uint32_t rank,
			  struct px_error *err);

/* The same, where "user,item" lines (no rating) are fine too, when
 * every line is one (`predict`): *ret_rated says whether the file has
 * ratings (else each r and the mean are 0). */
enum px_err mf_load_pairs(const char *path, uint32_t max_n,
			  struct mf_set *ret, bool *ret_rated,
			  struct px_error *err);

#endif
