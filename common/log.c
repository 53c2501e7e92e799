/* log.c -- stderr logger for the programs, journal-aware. */
#include "log.h"
#include "px.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide logger settings: the only statics outside main. */
static const char *log_prog = "proteus";
static enum log_level log_max = LOG_LVL_NOTICE;
static int log_journal = -1;

static const char *const level_names[] = {
	[LOG_LVL_ERR] = "error", [LOG_LVL_WARN] = "warning",
	[LOG_LVL_NOTICE] = "notice", [LOG_LVL_INFO] = "info",
	[LOG_LVL_DEBUG] = "debug",
};

void log_init(const char *prog, enum log_level max)
{
	log_prog = prog;
	log_max = max;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_level(enum log_level max)
{
	log_max = max;
}

enum log_level log_get_level(void)
{
	return log_max;
}

int log_level_parse(const char *s)
{
	for (int i = LOG_LVL_ERR; i <= LOG_LVL_DEBUG; i++)
		if (!strcmp(s, level_names[i]) ||
		    (i == LOG_LVL_ERR && !strcmp(s, "err")) ||
		    (i == LOG_LVL_WARN && !strcmp(s, "warn")))
			return i;
	return -1;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char raw[2048], line[PX_TERM_SAFE_LEN(sizeof raw)];
	va_list ap;

	if (lvl > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* One event, one line: whatever a message carries from outside (a
	 * job's name, a path, a peer's text) cannot forge a second line or
	 * reach a terminal as an escape sequence. */
	px_term_safe(raw, line, sizeof line);
	if (log_journal == 1)
		fprintf(stderr, "<%d>%s\n", (int)lvl, line);
	else
		fprintf(stderr, "%s: %s: %s\n", log_prog, level_names[lvl],
			line);
}
