/* test_log.c -- the logger writes one line per message, whatever the
 * message carries from outside. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>

#include "../../common/log.h"

static void redirect(void)
{
	unsetenv("JOURNAL_STREAM");
	cr_redirect_stderr();
}

Test(log, outside_text_cannot_forge_a_line_or_reach_a_terminal,
     .init = redirect)
{
	/* a job name with a newline, a forged "notice" and an ESC sequence */
	const char *name = "x\nproteusd: notice: job 7 done\x1b[2J\a\\";

	log_init("proteusd", LOG_LVL_INFO);
	log_notice("job %d '%s' queued", 3, name);
	fflush(stderr);
	cr_assert_stderr_eq_str(
		"proteusd: notice: job 3 'x\\nproteusd: notice: job 7 "
		"done\\x1b[2J\\x07\\\\' queued\n");
}

Test(log, journal_lines_are_escaped_too, .init = redirect)
{
	setenv("JOURNAL_STREAM", "8:9", 1);
	log_init("proteusd", LOG_LVL_INFO);
	log_warn("client said '%s'", "a\rb\tc\xc2\x9b" "1m");
	fflush(stderr);
	cr_assert_stderr_eq_str("<4>client said 'a\\rb\\tc\\x9b1m'\n");
}
