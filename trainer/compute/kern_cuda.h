/* kern_cuda.h -- the C-callable GPU path: a CUDA context and its ops table.
 *
 * The CUDA kernels (kern_cuda.cu) live in a shared object,
 * libproteus-cuda.so, linked against cuBLAS and cudart; no program links
 * those.  The functions below (kern_load.c, in every build) dlopen it the
 * first time a CUDA device is asked for and reach it through one table,
 * struct kern_cuda_api, returned by its one exported symbol.  A build
 * without the CUDA libraries answers PX_EUNSUPP ("CUDA support was not
 * built"), so callers need no #ifdef.  Where the library is looked for:
 * docs/trainer-compute.md, "Loading the CUDA library".
 */
#ifndef PX_KERN_CUDA_H
#define PX_KERN_CUDA_H

#include "kern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device, a cuBLAS handle and a stream.  Opaque. */
struct kern_cuda;

/* ---- the loader (kern_load.c) ---- */

/* Load libproteus-cuda.so once per process (thread-safe; a failure is
 * remembered and reported again).  PX_EUNSUPP in a build without CUDA;
 * PX_ECUDA naming every path tried with its dlerror when it cannot be
 * loaded or its ABI differs. */
enum px_err kern_cuda_load(struct px_error *err);

/* Number of visible CUDA devices; 0 when none, when the driver is missing
 * or when the library cannot be loaded (the reason is then put in *err,
 * which may be NULL). */
int kern_cuda_device_count(struct px_error *err);

/* Load the library and see a device: PX_OK, or the load error, or
 * PX_ECUDA "no CUDA device (<the CUDA error>)".  No context is made. */
enum px_err kern_cuda_check(struct px_error *err);

/* Load the library, then open device `device` (0-based): select it,
 * create a cuBLAS handle in FP32 math mode (no TF32) bound to a new
 * stream.  PX_ECUDA ("no CUDA device: ...") when there is none, or with
 * the CUDA or cuBLAS error string when there is no such device or setup
 * fails.  Free with kern_cuda_free. */
enum px_err kern_cuda_new(int device, struct kern_cuda **ret,
			  struct px_error *err);

/* Destroy the handle and stream; NULL is a no-op. */
void kern_cuda_free(struct kern_cuda *k);

/* The device's name as the driver reports it ("NVIDIA H100 80GB HBM3");
 * valid until kern_cuda_free. */
const char *kern_cuda_name(const struct kern_cuda *k);

/* The CUDA ops table, once kern_cuda_new has succeeded (NULL before);
 * pass the struct kern_cuda * as its ctx.  All pointers given to its ops
 * are device pointers (from its alloc) except the host side of
 * upload/download.  Ops run on the context's stream; upload and download
 * synchronize it.  kern_cuda_new selects the device for the calling
 * thread only (cudaSetDevice): run the ops on that thread, or on one
 * whose current device is the same. */
const struct kern_ops *kern_cuda_ops(void);

/* ---- the library's side: one symbol, one table ---- */

/* Bump when struct kern_cuda_api, struct kern_ops, struct px_error or
 * enum px_err changes: a library built from other sources is refused. */
#define KERN_CUDA_ABI 1
#define KERN_CUDA_ENTRY "px_kern_cuda_entry"
#define KERN_CUDA_LIB "libproteus-cuda.so"

struct kern_cuda_api {
	uint32_t abi;          /* KERN_CUDA_ABI */
	uint32_t size;         /* sizeof(struct kern_cuda_api) */
	uint32_t ops_size;     /* sizeof(struct kern_ops) */
	uint32_t error_size;   /* sizeof(struct px_error) */
	const struct kern_ops *ops;
	int (*device_count)(struct px_error *err);
	enum px_err (*open)(int device, struct kern_cuda **ret,
			    struct px_error *err);
	void (*close)(struct kern_cuda *k);
	const char *(*name)(const struct kern_cuda *k);
};

/* The library's one exported function, named KERN_CUDA_ENTRY. */
typedef const struct kern_cuda_api *(*kern_cuda_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
