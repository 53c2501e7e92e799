/* proteusctl -- the command-line client: submit and watch jobs, read the
 * market and cost history, replay a spot-price trace offline.
 *
 * Each command lives in its own ctl_<name>.c; this file only dispatches.
 * Exit codes: see enum ctl_exit in ctl.h and docs/proteusctl.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "ctl.h"

struct ctl_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct ctl_cmd ctl_cmds[] = {
	{"market", ctl_market,
	 "import or fetch spot prices and on-demand prices; show markets"},
	{"simulate", ctl_simulate,
	 "replay spot-price traces and compare allocation policies"},
	{"history", ctl_history,
	 "list stored runs; show one run's events and cost"},
	{"ping", ctl_ping, "check that proteusd answers on its socket"},
	{"status", ctl_status,
	 "proteusd's pid, uptime, database, world, clients, store counts"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: proteusctl [--version] [--help] COMMAND [ARGS]\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", ctl_cmds[i].name,
			ctl_cmds[i].summary);
	fprintf(f, "\n'proteusctl COMMAND --help' tells more about one "
		   "command.\n");
}

int main(int argc, char **argv)
{
	const char *lvl = getenv("PROTEUS_LOG_LEVEL");
	int l = lvl ? log_level_parse(lvl) : -1;

	log_init("proteusctl", l >= 0 ? (enum log_level)l : LOG_LVL_NOTICE);
	if (argc < 2) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("proteusctl %s\n", PX_VERSION);
		return CTL_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		if (!strcmp(argv[1], ctl_cmds[i].name))
			return ctl_cmds[i].run(argc - 1, argv + 1);
	log_err("unknown command '%s' (see 'proteusctl --help')", argv[1]);
	return CTL_EXIT_USAGE;
}
