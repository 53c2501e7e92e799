/* safetensors.h -- the safetensors container (docs/trainer.md, "Take the
 * model away"), float32 tensors only: what `--export` writes and
 * `predict` reads.
 *
 * The format, as its specification and reference implementation have
 * it: an 8-byte little-endian unsigned length N; N bytes of a JSON
 * object, its first byte '{', padded with spaces (0x20) to a multiple of
 * 8, that maps each tensor's name to {"dtype", "shape", "data_offsets":
 * [begin, end]} and may hold "__metadata__", an object of strings; then
 * the byte buffer, every tensor's raw little-endian data at its offsets
 * (relative to the buffer's start), which the tensors cover exactly: no
 * gap, no overlap, nothing after the last.
 *
 * The writer puts "__metadata__" first (as the reference writer does),
 * then the tensors in the order given, at contiguous offsets; it writes
 * a temporary file beside the path (mkostemp), syncs it and renames it
 * over the path, so a reader sees the old file or the new one whole.
 * The reader checks every field before it allocates, and names the file
 * and the field of the first that is wrong.
 */
#ifndef PX_SAFETENSORS_H
#define PX_SAFETENSORS_H

#include <jansson.h>
#include <stdint.h>

#include "../../common/px.h"

/* The reference reader refuses a header over 100 MB: so do we. */
#define ST_HEADER_MAX 100000000u
#define ST_MAX_TENSORS 64u
#define ST_MAX_DIMS 8u
#define ST_NAME_MAX 128u    /* bytes of a name, NUL included */

struct st_tensor {
	char name[ST_NAME_MAX];
	uint32_t ndim;
	uint64_t shape[ST_MAX_DIMS];
	uint64_t n;          /* elements: the product of shape (1 for []) */
	const float *data;   /* n floats in host order */
};

/* A file read: its tensors in the order of their data, its metadata. */
struct st_file {
	uint32_t n;
	struct st_tensor t[ST_MAX_TENSORS];
	json_t *meta;        /* "__metadata__" (strings), or NULL: none */
	float *buf;          /* owns every tensor's data */
};

/* Whether st_write could write path: refuses a directory, a FIFO, a
 * device or a socket there (rename would replace it; nobody means
 * that), and a folder where no temporary file can be made.  Programs
 * call it before they train, so that a run never ends unable to write
 * its model.  Errors name the path and say "model file". */
enum px_err st_check_writable(const char *path, struct px_error *err);

/* Write n tensors (names unique, not "__metadata__") and meta (NULL: no
 * "__metadata__"; values must be strings) to path, atomically, mode 0644
 * less the umask. */
enum px_err st_write(const char *path, const struct st_tensor *t, uint32_t n,
		     json_t *meta, struct px_error *err);

/* Read and check path: a regular file; the header length within the
 * file and ST_HEADER_MAX; a JSON object beginning with '{', no key twice;
 * each tensor a name of at most ST_NAME_MAX - 1 bytes with exactly
 * "dtype" "F32", "shape" (at most ST_MAX_DIMS sizes) and "data_offsets"
 * whose length is the shape's; the tensors tiling the buffer; data of at
 * most max_floats floats in all; "__metadata__" an object of strings.
 * PX_EINVAL naming the file and field; release f with st_file_release. */
enum px_err st_read(const char *path, uint64_t max_floats, struct st_file *f,
		    struct px_error *err);

/* The tensor named name, or NULL. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);
/* The metadata's value for key, or NULL. */
const char *st_meta(const struct st_file *f, const char *key);
/* Free what st_read filled; zeroes f.  Safe on a zeroed one. */
void st_file_release(struct st_file *f);

#endif
