/* kern_load.c -- find and dlopen libproteus-cuda.so the first time a CUDA
 * device is asked for, so that no program links cuBLAS or cudart and a
 * CPU run (or --help) never maps them.
 *
 * Where it looks, first found wins (all of it is in the error otherwise):
 *   $PROTEUS_CUDA_LIB, when set and not empty: that file only;
 *   the executable's folder (/proc/self/exe), as in build/;
 *   ../lib/proteus/ from there, as `make install` lays it out;
 *   PX_CUDA_LIBDIR, the install folder baked in at build time.
 * The library must export KERN_CUDA_ENTRY returning a table whose ABI and
 * struct sizes are this program's; one that does not is passed over.
 */
#include "kern_cuda.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t kl_lock = PTHREAD_MUTEX_INITIALIZER;
static bool kl_tried;                     /* under kl_lock */
static const struct kern_cuda_api *kl_api; /* under kl_lock; then fixed */
static struct px_error kl_err;            /* why kl_api is NULL */

#ifdef PX_HAVE_CUDA

#ifndef PX_CUDA_LIBDIR
#define PX_CUDA_LIBDIR "/usr/local/lib/proteus"
#endif

/* Append "; " and a formatted note to the message being built. */
static void kl_note(struct px_error *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void kl_note(struct px_error *e, const char *fmt, ...)
{
	size_t n = strnlen(e->msg, sizeof(e->msg));
	va_list ap;

	if (n + 3 >= sizeof(e->msg))
		return;
	if (n) {
		memcpy(e->msg + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(e->msg + n, sizeof(e->msg) - n, fmt, ap);
	va_end(ap);
}

/* One candidate: the table, or NULL with the reason noted in *why. */
static const struct kern_cuda_api *kl_try(const char *path,
					  struct px_error *why)
{
	const struct kern_cuda_api *api;
	kern_cuda_entry_fn entry;
	void *h, *sym;

	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *d = dlerror();

		/* dlerror names the file, except for an empty path */
		kl_note(why, "%s", d ? d : path);
		return NULL;
	}
	sym = dlsym(h, KERN_CUDA_ENTRY);
	if (!sym) {
		const char *d = dlerror();

		kl_note(why, "%s", d ? d : KERN_CUDA_ENTRY " not found");
		goto out_close;
	}
	/* POSIX: a function pointer round-trips through void * */
	memcpy(&entry, &sym, sizeof(entry));
	api = entry();
	if (!api || api->abi != KERN_CUDA_ABI ||
	    api->size != sizeof(struct kern_cuda_api) ||
	    api->ops_size != sizeof(struct kern_ops) ||
	    api->error_size != sizeof(struct px_error) || !api->ops ||
	    !api->device_count || !api->open || !api->close || !api->name) {
		kl_note(why, "%s: built from other sources (ABI %u, this "
			"program's %u): rebuild both with make", path,
			api ? api->abi : 0, KERN_CUDA_ABI);
		goto out_close;
	}
	return api;

out_close:
	dlclose(h);
	return NULL;
}

static const struct kern_cuda_api *kl_find(struct px_error *why)
{
	const char *env = getenv("PROTEUS_CUDA_LIB");
	const struct kern_cuda_api *api;
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n;
	char *slash;

	if (env && *env)
		return kl_try(env, why);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	slash = n > 0 ? memrchr(exe, '/', (size_t)n) : NULL;
	if (slash) {
		*slash = '\0';
		snprintf(path, sizeof(path), "%s/" KERN_CUDA_LIB, exe);
		if ((api = kl_try(path, why)))
			return api;
		snprintf(path, sizeof(path), "%s/../lib/proteus/"
			 KERN_CUDA_LIB, exe);
		if ((api = kl_try(path, why)))
			return api;
	} else {
		kl_note(why, "/proc/self/exe unreadable: not looked for "
			"next to the program");
	}
	return kl_try(PX_CUDA_LIBDIR "/" KERN_CUDA_LIB, why);
}

#endif /* PX_HAVE_CUDA */

/* The table, or NULL with the reason in *err.  Loads at most once. */
static const struct kern_cuda_api *kl_get(struct px_error *err)
{
	const struct kern_cuda_api *api;

	pthread_mutex_lock(&kl_lock);
	if (!kl_tried) {
		kl_tried = true;
#ifdef PX_HAVE_CUDA
		struct px_error why = { 0 };

		kl_api = kl_find(&why);
		if (!kl_api)
			(void)px_errorf(&kl_err, PX_ECUDA, "cannot load the "
					"CUDA library " KERN_CUDA_LIB " (set "
					"PROTEUS_CUDA_LIB to its path): %s",
					why.msg);
#else
		(void)px_errorf(&kl_err, PX_EUNSUPP, "CUDA support was not "
				"built into this program (make found no nvcc "
				"with libcudart and libcublas, or CUDA=0): "
				"use --device cpu");
#endif
	}
	api = kl_api;
	if (!api && err)
		*err = kl_err;
	pthread_mutex_unlock(&kl_lock);
	return api;
}

enum px_err kern_cuda_load(struct px_error *err)
{
	return kl_get(err) ? PX_OK : kl_err.code;
}

int kern_cuda_device_count(struct px_error *err)
{
	const struct kern_cuda_api *api = kl_get(err);

	return api ? api->device_count(err) : 0;
}

enum px_err kern_cuda_check(struct px_error *err)
{
	const struct kern_cuda_api *api = kl_get(err);
	struct px_error why = { 0 };

	if (!api)
		return kl_err.code;
	if (api->device_count(&why) <= 0)
		return px_errorf(err, PX_ECUDA, "no CUDA device (%s)",
				 why.msg[0] ? why.msg
					    : "cudaGetDeviceCount found none");
	return PX_OK;
}

enum px_err kern_cuda_new(int device, struct kern_cuda **ret,
			  struct px_error *err)
{
	enum px_err e = kern_cuda_check(err);

	if (e != PX_OK)
		return e;
	return kl_get(NULL)->open(device, ret, err);
}

void kern_cuda_free(struct kern_cuda *k)
{
	/* a context exists only once the library is loaded */
	if (k)
		kl_get(NULL)->close(k);
}

const char *kern_cuda_name(const struct kern_cuda *k)
{
	return k ? kl_get(NULL)->name(k) : "";
}

const struct kern_ops *kern_cuda_ops(void)
{
	const struct kern_cuda_api *api;

	pthread_mutex_lock(&kl_lock);
	api = kl_api;
	pthread_mutex_unlock(&kl_lock);
	return api ? api->ops : NULL;
}
