/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl boot-cmdline: the kernel command-line arguments that start
 * the configured capture at boot, so that stackmapd can adopt the
 * top-level buffer with everything recorded since early boot, and those
 * that keep the crash buffer ([crash]) across a warm reboot.
 */
#include <assert.h>
#include <getopt.h>

#include "commands.h"
#include "config.h"
#include "log.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: stackmapctl boot-cmdline [-c FILE]\n\n"
		"Print the kernel command-line arguments that start the capture that FILE\n"
		"configures (default " SYSCONFDIR "/stackmapd.conf), on one line, with\n"
		"reserve_mem= and trace_instance= for the crash buffer when [crash] has one.\n\n"
		"  -c, --config FILE   the stackmapd configuration file\n"
		"  -h, --help          show this help\n");
}

/* What the kernel command line cannot say; comment lines on stderr, not part of the output. */
static void note_limits(const struct config *c)
{
	for (unsigned i = 0; i < c->nr_events; i++)
		if (c->events[i].filter)
			fprintf(stderr, "# note: filters cannot be given on the kernel command "
				"line: %s:%s records every hit until stackmapd starts and sets "
				"trace.filter.%s:%s\n", c->events[i].system, c->events[i].name,
				c->events[i].system, c->events[i].name);
}

/* Say why config_boot_cmdline() returned r; the exit status. */
static int explain_error(int r, const char *path, const struct config *c)
{
	switch (r) {
	case -EINVAL:
		log_err("%s: boot capture needs the top-level instance (instance = '%s'): the "
			"kernel starts boot-time events in the top-level buffer only", path,
			c->instance);
		return CONFIG_EXIT_INVALID;
	case -ENOTUNIQ:
		log_err("%s: trace_trigger= names events without their system, and two events in "
			"trace.events have the same name but not the same trace.stacktrace setting",
			path);
		return CONFIG_EXIT_INVALID;
	case -E2BIG:
		log_err("%s: the kernel takes at most 32 trace_trigger= entries: list fewer events "
			"in trace.stacktrace, or use stacktrace = all", path);
		return CONFIG_EXIT_INVALID;
	default:
		(void)log_errno(LOG_ERR, r, "cannot make the command line");
		return 1;
	}
}

int cmd_boot_cmdline(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *path = SYSCONFDIR "/stackmapd.conf";
	_cleanup_free_ char *error = NULL, *line = NULL, *crash = NULL;
	struct config c;
	int opt, r, ret = CONFIG_EXIT_INVALID;

	assert(argv);

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+c:h", options, NULL)) >= 0) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		usage(stderr);
		return 2;
	}

	r = config_init(&c);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot set up the configuration");
		return 1;
	}
	/*
	 * Not checked against tracefs: the arguments are usually made for
	 * another boot, maybe another kernel.
	 */
	r = config_load(&c, path, &error);
	if (r >= 0)
		r = config_check(&c, &error);
	if (r < 0) {
		if (error)
			log_err("%s", error);
		else
			(void)log_errno(LOG_ERR, r, "cannot load '%s'", path);
		ret = r == -ENOMEM ? 1 : CONFIG_EXIT_INVALID;
		goto out;
	}

	r = config_crash_cmdline(&c, &crash);
	if (r < 0 && r != -ENODATA) {
		(void)log_errno(LOG_ERR, r, "cannot make the command line");
		ret = 1;
		goto out;
	}
	r = config_boot_cmdline(&c, &line);
	if (r == -EINVAL && crash) {
		/* a named instance: no boot capture, but the crash buffer works with any */
		fprintf(stderr, "# note: boot capture needs the top-level instance; only the crash "
			"buffer's arguments are printed\n");
	} else if (r < 0) {
		ret = explain_error(r, path, &c);
		goto out;
	} else
		note_limits(&c);
	printf("%s%s%s\n", line ?: "", line && crash ? " " : "", crash ?: "");
	ret = fflush(stdout) == 0 ? 0 : 1;
out:
	config_done(&c);
	return ret;
}
