/* fuzz_ckpt.c -- libFuzzer harness for the checkpoint reader: any file
 * gives a checkpoint whose header, size and SHA-256 agree, or an error
 * naming the file (an mf model's has no momentum: its parameters
 * alone).  The input goes into a memfd read by path. */
#ifndef _GNU_SOURCE           /* the Makefile defines it too */
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../trainer/io/ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct ckpt_meta m;
	struct px_error err = { 0 };
	float *w, *v;
	enum px_err rc;

	if (fd < 0) {
		fd = memfd_create("fuzz_ckpt", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 ||
	    (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	rc = ckpt_read(path, &m, &w, &v, &err);
	if (rc != PX_OK) {
		if (err.code != rc || !strstr(err.msg, path) || w || v)
			abort();
		return 0;
	}
	if (!w || !v || m.d.n_params == 0 || m.clock > m.total ||
	    size != m.d.n_params * (m.d.kind == MODEL_MF ? 4 : 8) + 32 +
			    (size_t)(memchr(data, '\n', size) -
				     (const void *)data) + 1)
		abort();
	free(w);
	free(v);
	return 0;
}
