/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Drive daemon/tracing.c against the live tracefs for test-tracing.sh:
 * configure a named instance with a fixed config (buffer size and clock
 * different from the kernel's defaults), print what it sees as
 * "key: value" lines, optionally wait (--hold: until stdin closes) so the
 * script can look at tracefs, then restore and exit.
 *
 * --wakeup-filter, --clock and --stackmap change the config,
 * --validate-only stops after tracing_validate(). Exit status: 0 done, 1 failure, 2 the
 * config was refused by tracing_validate().
 */
#include <getopt.h>
#include <inttypes.h>

#include "config.h"
#include "log.h"
#include "tracing.h"
#include "util.h"

static const struct {
	const char *system, *name, *filter;
	bool stacktrace;
} probe_events[] = {
	{ "sched", "sched_switch", "prev_pid >= 0", true },
	{ "sched", "sched_wakeup", NULL, false },
	{ "kmem", "kmalloc", NULL, true },
};

static void free_config(struct config *c)
{
	for (unsigned i = 0; i < c->nr_events; i++) {
		free(c->events[i].system);
		free(c->events[i].name);
		free(c->events[i].filter);
	}
	free(c->events);
	free(c->instance);
	free(c->clock);
}

/* Filled by hand: this program must not depend on the config parser. */
static int make_config(struct config *c, const char *instance, bool stacktrace_all,
		       const char *wakeup_filter, const char *clock, enum config_stackmap stackmap)
{
	*c = (struct config){
		.instance = strdup(instance),
		.stacktrace_all = stacktrace_all,
		.buffer_size_kb = 2048,
		.clock = strdup(clock),
		.stackmap = stackmap,
		.record_mode = CONFIG_RECORD_STREAM,
	};
	c->events = calloc(ARRAY_SIZE(probe_events), sizeof(*c->events));
	if (!c->instance || !c->clock || !c->events)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(probe_events); i++) {
		struct config_event *ev = &c->events[c->nr_events++];
		const char *filter = probe_events[i].filter;

		if (wakeup_filter && streq(probe_events[i].name, "sched_wakeup"))
			filter = wakeup_filter;
		ev->system = strdup(probe_events[i].system);
		ev->name = strdup(probe_events[i].name);
		ev->filter = filter ? strdup(filter) : NULL;
		ev->stacktrace = probe_events[i].stacktrace;
		if (!ev->system || !ev->name || (filter && !ev->filter))
			return -ENOMEM;
	}
	return 0;
}

static int print_file(const char *name, const void *data, size_t len, void *userdata)
{
	unsigned *count = userdata;

	printf("file: %s %zu\n", name, len);
	(*count)++;
	return 0;
}

static int print_state(struct tracing *t, const struct config *c)
{
	_cleanup_free_ char *clock = tracing_clock(t);
	unsigned files = 0;
	int r;

	printf("instance_dir: %s\n", tracing_instance_dir(t));
	printf("instance_name: %s\n", tracing_instance_name(t));
	printf("instance_handle: %s\n", tracing_instance(t) ? "yes" : "no");
	printf("nr_cpus: %d\n", tracing_nr_cpus(t));
	for (int cpu = 0; cpu < tracing_nr_cpus(t); cpu++)
		printf("cpu_online: %d %d\n", cpu, tracing_cpu_online(t, cpu));
	printf("page_size: %d\n", tracing_page_size(t));
	printf("clock: %s\n", clock ? clock : "(none)");
	printf("has_stackmap: %d\n", tracing_has_stackmap(t));

	for (unsigned i = 0; i < c->nr_events; i++)
		printf("event_id: %s:%s %d\n", c->events[i].system, c->events[i].name,
		       tracing_event_id(t, c->events[i].system, c->events[i].name));
	printf("event_id: ftrace:kernel_stack %d\n", tracing_event_id(t, "ftrace", "kernel_stack"));
	printf("event_id: no:such_event %d\n", tracing_event_id(t, "no", "such_event"));

	r = tracing_write_marker(t, "tracing-probe marker");
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot write a marker");
	printf("has_data: %d\n", tracing_buffer_has_data(t));
	for (int cpu = 0; cpu < tracing_nr_cpus(t); cpu++) {
		struct tracing_cpu_stats st;

		r = tracing_cpu_stats(t, cpu, &st);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot read the stats of CPU %d", cpu);
		printf("cpu_stats: %d entries=%" PRIu64 " overrun=%" PRIu64 " commit_overrun=%" PRIu64
		       " bytes=%" PRIu64 " dropped=%" PRIu64 " read=%" PRIu64 "\n",
		       cpu, st.entries, st.overrun, st.commit_overrun, st.bytes, st.dropped,
		       st.read_events);
	}

	r = tracing_collect_files(t, print_file, &files);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot collect the tracefs files");
	printf("files: %u\n", files);
	files = 0;
	r = tracing_collect_tasks(t, print_file, &files);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot collect the task files");
	printf("task_files: %u\n", files);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: tracing-probe [--hold] [--stacktrace-all] [--validate-only] "
		"[--wakeup-filter EXPR] [--clock NAME] [--stackmap auto|on|off] "
		"[--dir TRACEFS] INSTANCE\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "hold", no_argument, NULL, 'h' },
		{ "stacktrace-all", no_argument, NULL, 's' },
		{ "validate-only", no_argument, NULL, 'v' },
		{ "wakeup-filter", required_argument, NULL, 'f' },
		{ "clock", required_argument, NULL, 'c' },
		{ "stackmap", required_argument, NULL, 'm' },
		{ "dir", required_argument, NULL, 'd' },
		{}
	};
	bool hold = false, stacktrace_all = false, validate_only = false;
	const char *dir = NULL, *wakeup_filter = NULL, *clock = "mono";
	enum config_stackmap stackmap = CONFIG_STACKMAP_AUTO;
	_cleanup_free_ char *error = NULL;
	struct tracing *t = NULL;
	struct config c;
	int opt, r, status = 1;

	log_set_program("tracing-probe");
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			hold = true;
			break;
		case 's':
			stacktrace_all = true;
			break;
		case 'v':
			validate_only = true;
			break;
		case 'f':
			wakeup_filter = optarg;
			break;
		case 'c':
			clock = optarg;
			break;
		case 'm':
			if (streq(optarg, "on"))
				stackmap = CONFIG_STACKMAP_ON;
			else if (streq(optarg, "off"))
				stackmap = CONFIG_STACKMAP_OFF;
			else if (!streq(optarg, "auto")) {
				usage();
				return 1;
			}
			break;
		case 'd':
			dir = optarg;
			break;
		default:
			usage();
			return 1;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 1;
	}

	r = make_config(&c, argv[optind], stacktrace_all, wakeup_filter, clock, stackmap);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot build the config");
		goto out;
	}
	r = tracing_open(dir, &c, &t);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot open tracing instance '%s'", c.instance);
		goto out;
	}
	r = tracing_validate(t, &error);
	if (r < 0) {
		printf("invalid: %s\n", error ? error : strerror(-r));
		status = 2;
		goto out;
	}
	printf("valid\n");
	if (validate_only) {
		status = 0;
		goto out;
	}
	r = tracing_setup_events(t);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot set up the events");
		goto out;
	}
	r = tracing_setup_buffer(t);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot set up the ring buffer");
		goto out;
	}
	if (print_state(t, &c) < 0)
		goto out;

	if (hold) {
		char line[64];

		printf("ready\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin))
			;
	}
	status = 0;
out:
	fflush(stdout);
	tracing_restore(t);
	tracing_restore(t);		/* a second restore changes nothing */
	t = tracing_free(t);
	free_config(&c);
	printf("done: %d\n", status);
	return status;
}
