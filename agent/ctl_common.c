/* ctl_common.c -- helpers shared by proteusctl's commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "ctl.h"

int ctl_exit_for(enum px_err e)
{
	switch (e) {
	case PX_OK:
		return CTL_EXIT_OK;
	case PX_EINVAL:
	case PX_ETOOBIG:
		return CTL_EXIT_DATA;
	case PX_ENOENT:
		return CTL_EXIT_NOTFOUND;
	default:
		return CTL_EXIT_FAIL;
	}
}

/* mkdir -p for the folders above path's last component. */
static int make_parents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST) {
			log_err("cannot create '%s': %s", path,
				strerror(errno));
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return 0;
}

char *ctl_default_db(void)
{
	const char *env = getenv("PROTEUS_DB");
	const char *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	char *path = NULL;
	size_t n;

	if (env && *env)
		return strdup(env);
	if (xdg && *xdg) {
		n = strlen(xdg) + 32;
		path = malloc(n);
		if (path)
			snprintf(path, n, "%s/proteus/proteus.db", xdg);
	} else if (home && *home) {
		n = strlen(home) + 48;
		path = malloc(n);
		if (path)
			snprintf(path, n, "%s/.local/share/proteus/proteus.db",
				 home);
	} else {
		log_err("no database path: set PROTEUS_DB or HOME, or pass "
			"--db");
		return NULL;
	}
	if (!path) {
		log_err("out of memory");
		return NULL;
	}
	if (make_parents(path)) {
		free(path);
		return NULL;
	}
	return path;
}
