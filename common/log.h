/* log.h -- the programs' logger: proteusd and proteusctl (agent/), and
 * proteus-trainer with the few trainer/ files that run only inside it
 * (px.h says which); db, cloudapi and bidbrain never log.
 *
 * Writes one line per message to stderr.  Under systemd (JOURNAL_STREAM set)
 * lines carry "<N>" syslog priority prefixes so the journal keeps the level;
 * otherwise they read "prog: level: message".  The level is checked
 * before the message is formatted.
 */
#ifndef PX_LOG_H
#define PX_LOG_H

enum log_level {
	LOG_LVL_ERR = 3,
	LOG_LVL_WARN = 4,
	LOG_LVL_NOTICE = 5,
	LOG_LVL_INFO = 6,
	LOG_LVL_DEBUG = 7,
};

/* Set the program name shown in terminal mode and the maximum level. */
void log_init(const char *prog, enum log_level max);
void log_set_level(enum log_level max);
enum log_level log_get_level(void);
/* Parse "err|warn|notice|info|debug"; returns -1 when unknown. */
int log_level_parse(const char *s);

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_LVL_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
