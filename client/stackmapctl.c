/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl: control a running stackmapd and read its archives offline.
 * This file owns the command table, the usage text and the dispatch; each
 * command is in a cmd-*.c file (commands.h, commands-export.h).
 */
#include <assert.h>
#include <getopt.h>

#include "commands-export.h"
#include "commands.h"
#include "log.h"
#include "suggest.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *args;
	const char *help;
} commands[] = {
	{ "status", cmd_status, "[--json]", "state of the running daemon" },
	{ "snapshot", cmd_snapshot, "[--json]", "flush, snapshot the stack map, finish the segment, print its path" },
	{ "rotate", cmd_rotate, "[--json]", "finish the current segment and start a new one" },
	{ "reset", cmd_reset, "[--json]", "reset the kernel stack map: start a new generation" },
	{ "list", cmd_list, "[--json]", "finished segments with their time spans" },
	{ "reload", cmd_reload, "[--json]", "reload the configuration file" },
	{ "report", cmd_report, "SEGMENT...", "print the events, with their stacks" },
	{ "info", cmd_info, "[--json] SEGMENT...", "header, time span, per-CPU counts, lost events" },
	{ "verify", cmd_verify, "[--json] SEGMENT...", "check segments; exit 0 when all are intact" },
	{ "stacks", cmd_stacks, "[--json] SEGMENT...", "print the stack table" },
	{ "folded", cmd_folded, "[--event NAME] SEGMENT...", "folded stacks for flame graphs" },
	{ "top", cmd_top, "[--sort KEY] SEGMENT...", "hottest stacks per event type" },
	{ "flamegraph", cmd_flamegraph, "-o FILE.svg SEGMENT...", "interactive flame graph (SVG)" },
	{ "memory", cmd_memory, "SEGMENT...", "live kernel memory: curve, peak stacks, aging, churn" },
	{ "export", cmd_export, "--format F -o OUT SEG...", "write pprof, CSV or trace.dat (trace-cmd)" },
	{ "boot-cmdline", cmd_boot_cmdline, "[-c FILE]", "kernel arguments that start the same capture at boot" },
	{ "help", cmd_help, "[COMMAND]", "this list, or the options of COMMAND" },
};

const char *stackmapctl_command_help(const char *name)
{
	assert(name);

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (streq(commands[i].name, name))
			return commands[i].help;
	return NULL;
}

static void usage(FILE *f);

/* The run function of command name, or NULL (logged, with the closest name) if there is none. */
static int (*find_command(const char *name))(int, char **)
{
	const char *names[ARRAY_SIZE(commands)];
	const char *close;

	for (size_t k = 0; k < ARRAY_SIZE(commands); k++) {
		if (streq(name, commands[k].name))
			return commands[k].run;
		names[k] = commands[k].name;
	}
	close = suggest_closest(name, names, ARRAY_SIZE(commands));
	if (close)
		log_err("unknown command '%s'; did you mean '%s'? (stackmapctl --help lists them)",
			name, close);
	else
		log_err("unknown command '%s' (stackmapctl --help lists them)", name);
	return NULL;
}

/* help [COMMAND]: the command list, or COMMAND's own --help. */
int cmd_help(int argc, char **argv)
{
	int (*run)(int, char **);
	char *args[3];

	assert(argv);

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		log_err("help: one command at most");
		return 2;
	}
	if (streq(argv[1], "help")) {
		printf("Usage: stackmapctl help [COMMAND]\n");
		return 0;
	}
	run = find_command(argv[1]);
	if (!run)
		return 2;
	args[0] = argv[1];
	args[1] = (char *)"--help";
	args[2] = NULL;
	return run(2, args);
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: stackmapctl [--socket PATH] COMMAND [ARGS...]\n\nCommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-13s %-26s %s\n", commands[i].name, commands[i].args, commands[i].help);
	fprintf(f, "\nControl commands talk to the daemon over its socket; the others read files.\n");
}

int main(int argc, char **argv)
{
	int i = 1;

	log_set_program("stackmapctl");
	while (i < argc && argv[i][0] == '-') {
		if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (streq(argv[i], "--version")) {
			printf("stackmapctl %s\n", PACKAGE_VERSION);
			return 0;
		} else if (streq(argv[i], "--socket") && i + 1 < argc) {
			(void)setenv("STACKMAPD_SOCKET", argv[i + 1], 1);
			i += 2;
		} else {
			log_err("unknown option '%s'", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	{
		int (*run)(int, char **) = find_command(argv[i]);

		return run ? run(argc - i, argv + i) : 2;
	}
}
