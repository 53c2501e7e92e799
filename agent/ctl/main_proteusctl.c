/* proteusctl -- the command-line client: submit and watch jobs, read the
 * market and cost history, replay a spot-price trace offline, plan a
 * job on the stored prices before renting.
 *
 * Each command lives in a cli_*.c named after it or its group (cli.h:
 * cli_jobs.c holds submit, jobs, events and cancel); this file only
 * dispatches.
 * Exit codes: see enum cli_exit in cli.h and docs/proteusctl.md.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "cli.h"

struct cli_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct cli_cmd cli_cmds[] = {
	{"market", cli_market,
	 "import or fetch spot prices and on-demand prices; show markets"},
	{"simulate", cli_simulate,
	 "replay spot-price traces and compare allocation policies"},
	{"plan", cli_plan,
	 "the cost-time frontier of a job on the stored prices"},
	{"history", cli_history,
	 "list stored runs; show one run's events and cost"},
	{"ping", cli_ping, "check that proteusd answers on its socket"},
	{"status", cli_status,
	 "proteusd's pid, uptime, store counts; with a job id, the job's"},
	{"submit", cli_submit, "queue a job on proteusd; prints its id"},
	{"pool", cli_pool,
	 "the pool proteusd's jobs share: limits, use, shares, rho"},
	{"jobs", cli_jobs, "proteusd's jobs, their states and costs"},
	{"events", cli_events, "a job's events (--follow: as they come)"},
	{"cancel", cli_cancel, "end a job, releasing its instances"},
	{"report", cli_report,
	 "a job's money and fleet: cost by tier, market and type, hours, "
	 "evictions"},
	{"model", cli_model,
	 "a job's last checkpoint as a safetensors file (-o FILE)"},
	{"logs", cli_logs,
	 "each node's program output (--follow: as it comes)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: proteusctl [--db PATH] [--socket PATH] [--json] "
		   "COMMAND [ARGS]\n"
		   "       proteusctl --help | --version\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cli_cmds[i].name,
			cli_cmds[i].summary);
	fprintf(f, "\n"
		   "  --db PATH      database for every command (default\n"
		   "                 $PROTEUS_DB, else the running proteusd's,\n"
		   "                 else as proteusd's default)\n"
		   "  --socket PATH  proteusd's control socket (default\n"
		   "                 $PROTEUS_SOCKET, else as proteusd's)\n"
		   "  --json         print the result as JSON\n"
		   "\n'proteusctl COMMAND --help' tells more about one "
		   "command.\n"
		   "exit: 0 ok, 1 failure, 2 usage, 3 bad input data, "
		   "4 nothing matched\n");
}

/* A global option's value: "--db=X" or "--db X"; NULL when arg is not
 * that option.  *i moves past what was used. */
static const char *opt_value(int argc, char **argv, int *i, const char *name,
			     bool *missing)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n])
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

int main(int argc, char **argv)
{
	const char *lvl = getenv("PROTEUS_LOG_LEVEL");
	int l = lvl ? log_level_parse(lvl) : -1;
	bool missing = false;
	const char *v;
	int i;

	log_init("proteusctl", l >= 0 ? (enum log_level)l : LOG_LVL_NOTICE);
	/* the commands report bad options themselves (cli_bad_option) */
	opterr = 0;
	/* global options, before the command; the command's own come after
	 * it (parsed by hand: each command restarts getopt_long) */
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		if (!strcmp(a, "--version")) {
			printf("proteusctl %s\n", PX_VERSION);
			return CLI_EXIT_OK;
		}
		if (!strcmp(a, "--json")) {
			cli_g.json = true;
		} else if ((v = opt_value(argc, argv, &i, "--db", &missing))) {
			cli_g.db = v;
		} else if ((v = opt_value(argc, argv, &i, "--socket",
					  &missing))) {
			cli_g.socket = v;
		} else if (missing) {
			log_err("option '%s' needs a value (see 'proteusctl "
				"--help')", a);
			return CLI_EXIT_USAGE;
		} else {
			log_err("unknown option '%s' before the command (see "
				"'proteusctl --help')", a);
			return CLI_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		log_err("no command given (see 'proteusctl --help')");
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	for (size_t k = 0; k < sizeof(cli_cmds) / sizeof(cli_cmds[0]); k++)
		if (!strcmp(argv[i], cli_cmds[k].name))
			return cli_cmds[k].run(argc - i, argv + i);
	log_err("unknown command '%s' (see 'proteusctl --help')", argv[i]);
	return CLI_EXIT_USAGE;
}
