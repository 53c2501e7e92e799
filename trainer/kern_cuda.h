/* kern_cuda.h -- the C-callable GPU path: a CUDA context and its ops table.
 *
 * Built from kern_cuda.cu when nvcc is present (the Makefile then defines
 * PX_HAVE_CUDA for every file); otherwise the inline stubs below answer
 * PX_EUNSUPP, so callers need no #ifdef of their own.
 */
#ifndef PX_KERN_CUDA_H
#define PX_KERN_CUDA_H

#include "kern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device, a cuBLAS handle and a stream.  Opaque. */
struct kern_cuda;

#ifdef PX_HAVE_CUDA

/* Number of visible CUDA devices; 0 when none (or when the driver is
 * missing: the CUDA error is then put in *err, which may be NULL). */
int kern_cuda_device_count(struct px_error *err);

/* Open device `device` (0-based): select it, create a cuBLAS handle in
 * FP32 math mode (no TF32) bound to a new stream.  PX_ECUDA with the CUDA
 * or cuBLAS error string when there is no such device or setup fails.
 * Free with kern_cuda_free. */
enum px_err kern_cuda_new(int device, struct kern_cuda **ret,
			  struct px_error *err);

/* Destroy the handle and stream; NULL is a no-op. */
void kern_cuda_free(struct kern_cuda *k);

/* The device's name as the driver reports it ("NVIDIA H100 80GB HBM3");
 * valid until kern_cuda_free. */
const char *kern_cuda_name(const struct kern_cuda *k);

/* The CUDA ops table; pass the struct kern_cuda * as its ctx.  All
 * pointers given to its ops are device pointers (from its alloc) except
 * the host side of upload/download.  Ops run on the context's stream;
 * upload and download synchronize it.  kern_cuda_new selects the device
 * for the calling thread only (cudaSetDevice): run the ops on that thread,
 * or on one whose current device is the same. */
extern const struct kern_ops kern_cuda_ops;

#else /* !PX_HAVE_CUDA */

static inline int kern_cuda_device_count(struct px_error *err)
{
	(void)px_errorf(err, PX_EUNSUPP, "built without cuda");
	return 0;
}

static inline enum px_err kern_cuda_new(int device, struct kern_cuda **ret,
					struct px_error *err)
{
	(void)device;
	(void)ret;
	return px_errorf(err, PX_EUNSUPP, "built without cuda");
}

static inline void kern_cuda_free(struct kern_cuda *k)
{
	(void)k;
}

static inline const char *kern_cuda_name(const struct kern_cuda *k)
{
	(void)k;
	return "";
}

#endif /* PX_HAVE_CUDA */

#ifdef __cplusplus
}
#endif

#endif
