/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel command line that starts the configured capture at boot
 * (trace_event=, trace_options=, trace_trigger=, trace_buf_size=,
 * trace_clock=), so that stackmapd can adopt the top-level buffer with
 * everything recorded since early boot. Used by stackmapctl boot-cmdline;
 * it needs nothing but the parsed configuration.
 */
#include "config.h"
#include "config-internal.h"
#include "util.h"

/* The kernel keeps at most this many trace_trigger= entries (MAX_BOOT_TRIGGERS). */
#define BOOT_MAX_TRIGGERS 32

/*
 * trace_event= and trace_trigger= lists: every event, and a stacktrace
 * trigger for each event with a stack when not all have one. *ret_stacks
 * says whether any event records a stack.
 */
static int boot_events(const struct config *c, char **events, char **triggers, bool *ret_stacks)
{
	unsigned nr_triggers = 0;
	bool stacks = false;

	for (unsigned i = 0; i < c->nr_events; i++) {
		const struct config_event *e = &c->events[i];
		_cleanup_free_ char *ev = NULL;
		bool seen = false;

		if (strprintf(&ev, "%s:%s", e->system, e->name) < 0 ||
		    config_append_word(events, ",", ev) < 0)
			return -ENOMEM;
		stacks |= e->stacktrace;
		if (c->stacktrace_all || !e->stacktrace)
			continue;
		/*
		 * trace_trigger= names events without their system (the kernel
		 * matches the bare name), so two configured events with the same
		 * name would both get the trigger.
		 */
		for (unsigned j = 0; j < c->nr_events; j++) {
			if (j == i || !streq(c->events[j].name, e->name))
				continue;
			if (c->events[j].stacktrace != e->stacktrace)
				return -ENOTUNIQ;
			seen |= j < i;
		}
		if (seen)
			continue;
		if (++nr_triggers > BOOT_MAX_TRIGGERS)
			return -E2BIG;
		free(ev);
		ev = NULL;
		if (strprintf(&ev, "%s.stacktrace", e->name) < 0 ||
		    config_append_word(triggers, ",", ev) < 0)
			return -ENOMEM;
	}
	*ret_stacks = stacks;
	return 0;
}

/* Append " NAME=VALUE" to *line (nothing for a NULL value). */
static int append_arg(char **line, const char *name, const char *value)
{
	char *n = NULL;

	if (!value)
		return 0;
	if (strprintf(&n, "%s%s%s=%s", *line ?: "", *line ? " " : "", name, value) < 0)
		return -ENOMEM;
	free(*line);
	*line = n;
	return 0;
}

int config_boot_cmdline(const struct config *c, char **ret)
{
	_cleanup_free_ char *events = NULL, *options = NULL, *triggers = NULL, *line = NULL;
	bool stacks = false;
	char size[32];
	int r;

	/* The kernel starts boot-time events in the top-level buffer only. */
	if (!c->instance || c->instance[0])
		return -EINVAL;
	if (c->nr_events == 0)
		return -EINVAL;
	r = boot_events(c, &events, &triggers, &stacks);
	if (r < 0)
		return r;
	/* The stack map only changes how stacks are stored, so it needs stacks. */
	if (stacks && c->stackmap != CONFIG_STACKMAP_OFF &&
	    config_append_word(&options, ",", "stackmap") < 0)
		return -ENOMEM;
	if (c->stacktrace_all && stacks && config_append_word(&options, ",", "stacktrace") < 0)
		return -ENOMEM;
	/*
	 * Streaming runs with overwrite off (the kernel drops and counts new
	 * events rather than overwrite unread ones); start the boot capture
	 * the same way, which also keeps the earliest events if the buffer
	 * fills before stackmapd starts.
	 */
	/*
	 * Except with a crash buffer: an instance made at boot takes the
	 * top level's options, and Linux 6.12 dereferences the missing
	 * snapshot buffer of a boot-mapped instance when its overwrite
	 * option is switched back on. The boot capture then overwrites its
	 * oldest events if the buffer fills before stackmapd starts.
	 */
	if (c->record_mode == CONFIG_RECORD_STREAM && !c->crash_buffer_size &&
	    config_append_word(&options, ",", "nooverwrite") < 0)
		return -ENOMEM;

	/* trace_buf_size= is per CPU and goes through memparse() (K, M, G suffixes). */
	if (append_arg(&line, "trace_event", events) < 0 ||
	    append_arg(&line, "trace_options", options) < 0 ||
	    append_arg(&line, "trace_trigger", triggers) < 0 ||
	    append_arg(&line, "trace_buf_size", c->buffer_size_kb ?
		       config_format_size(c->buffer_size_kb * KB, size) : NULL) < 0 ||
	    append_arg(&line, "trace_clock", c->clock) < 0 || !line)
		return -ENOMEM;
	*ret = steal_ptr(line);
	return 0;
}

/*
 * The crash buffer: reserve_mem= keeps SIZE bytes at the same physical
 * address across a warm reboot (Linux 6.12), trace_instance=NAME@LABEL
 * puts an instance's ring buffer in them. "^traceoff" keeps the instance
 * from recording at the next boot before stackmapd has saved what the
 * previous boot left in it; the events after the comma are enabled at
 * boot (the instance syntax has no stacktrace option or trigger: stackmapd
 * sets those when it starts the instance).
 */
int config_crash_cmdline(const struct config *c, char **ret)
{
	_cleanup_free_ char *events = NULL, *line = NULL;
	char size[32];

	if (!c->crash_buffer_size)
		return -ENODATA;
	for (unsigned i = 0; i < c->nr_events; i++) {
		_cleanup_free_ char *ev = NULL;

		if (strprintf(&ev, "%s:%s", c->events[i].system, c->events[i].name) < 0 ||
		    config_append_word(&events, ",", ev) < 0)
			return -ENOMEM;
	}
	if (strprintf(&line, "reserve_mem=%s:4096:%s trace_instance=%s^traceoff@%s%s%s",
		      config_format_size(c->crash_buffer_size, size), CONFIG_CRASH_INSTANCE,
		      CONFIG_CRASH_INSTANCE, CONFIG_CRASH_INSTANCE, events ? "," : "",
		      events ?: "") < 0)
		return -ENOMEM;
	*ret = steal_ptr(line);
	return 0;
}
