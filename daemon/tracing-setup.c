/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Configuring our instance as the config says: options (overwrite,
 * record-tgid, record-cmd, stacktrace, stackmap = off), each event's
 * filter, stacktrace trigger and enable, the flight recorder's traceoff
 * trigger, the pids to leave out, and the changes that clear the ring
 * buffer (buffer size, clock). Every change goes through the undo log
 * (tracing-undo.c); a step that fails puts back what it did.
 */
#include <assert.h>
#include <inttypes.h>

#include "buf.h"
#include "config.h"
#include "stack-expect.h"
#include "tracing-internal.h"
#include "util.h"

/* Set options/NAME of the instance; options the instance does not have are left alone. */
static int set_option(struct tracing *t, const char *name, bool on)
{
	char path[PATH_MAX];
	int r;

	r = tracing_pathf(path, "%s/options/%s", t->instance_dir, name);
	if (r < 0)
		return r;
	if (!tracing_exists(path))
		return 0;
	return tracing_set_value(t, path, on ? "1" : "0");
}

static bool option_is_on(const struct tracing *t, const char *name)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX];

	if (tracing_pathf(path, "%s/options/%s", t->instance_dir, name) < 0)
		return false;
	return tracing_read_value(path, &cur) >= 0 && streq(cur, "1");
}

/*
 * Global options. Returns in *ret_option_stacks whether options/stacktrace
 * gives every event its stack, so no per-event trigger is needed.
 */
static int setup_options(struct tracing *t, bool *ret_option_stacks)
{
	const struct config *c = t->config;
	bool all_want = c->nr_events > 0, option_stacks = false;
	char path[PATH_MAX];
	int r;

	/*
	 * Streaming wants overwrite off: when we fall behind, the kernel drops
	 * new events and counts them ("dropped events"), instead of silently
	 * overwriting pages we have not read yet.
	 */
	r = set_option(t, "overwrite", c->record_mode == CONFIG_RECORD_FLIGHT);
	if (r < 0)
		return r;
	/* saved_tgids and saved_cmdlines are only filled while these are on. */
	r = set_option(t, "record-tgid", true);
	if (r < 0)
		return r;
	r = set_option(t, "record-cmd", true);
	if (r < 0)
		return r;

	/*
	 * stackmap = off records full stacks even when the boot command line
	 * turned the stack map on. Turning it on is the stack-map module's
	 * job: it takes its first snapshot around that moment.
	 */
	if (c->stackmap == CONFIG_STACKMAP_OFF) {
		r = set_option(t, "stackmap", false);
		if (r < 0)
			return r;
	}

	r = tracing_pathf(path, "%s/options/stacktrace", t->instance_dir);
	if (r < 0)
		return r;
	if (tracing_exists(path)) {
		for (unsigned i = 0; i < c->nr_events; i++)
			if (!stack_expect_config(c, &c->events[i]))
				all_want = false;
		if (c->stacktrace_all) {
			r = tracing_set_value(t, path, "1");
			option_stacks = true;
		} else if (option_is_on(t, "stacktrace")) {
			/* Already on (boot capture): keep it if it is what we want anyway. */
			option_stacks = all_want;
			if (!all_want)
				r = tracing_set_value(t, path, "0");
		}
		if (r < 0)
			return r;
	}
	*ret_option_stacks = option_stacks;
	return 0;
}

static bool has_stacktrace_trigger(const char *triggers)
{
	const char *p = triggers;

	while (p && *p) {
		if (*p != '#' && startswith(p, "stacktrace"))
			return true;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static int event_path(const struct tracing *t, const struct config_event *ev, const char *file,
		      char path[static PATH_MAX])
{
	return tracing_pathf(path, "%s/events/%s/%s/%s", t->instance_dir, ev->system, ev->name, file);
}

/* The path of ev's control file and its value without the trailing newline. Returns 0 or -errno. */
static int event_value(const struct tracing *t, const struct config_event *ev, const char *file,
		       char path[static PATH_MAX], char **ret)
{
	int r;

	r = event_path(t, ev, file, path);
	if (r < 0)
		return r;
	return tracing_read_value(path, ret);
}

static int setup_filter(struct tracing *t, const struct config_event *ev)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX];
	int r;

	r = event_value(t, ev, "filter", path, &cur);
	if (r < 0)
		return r;
	if (ev->filter && !streq(cur, ev->filter))
		return tracing_change(t, path, ev->filter, streq(cur, "none") ? "0" : cur, true);
	if (!ev->filter && !streq(cur, "none"))
		return tracing_change(t, path, "0", cur, true);
	return 0;
}

static int setup_trigger(struct tracing *t, const struct config_event *ev)
{
	_cleanup_free_ char *cur = NULL, *cmd = NULL;
	char path[PATH_MAX];
	int r;

	r = event_path(t, ev, "trigger", path);
	if (r < 0)
		return r;
	r = read_file(path, &cur, NULL);
	if (r < 0)
		return r;
	if (has_stacktrace_trigger(cur))
		return 0;
	/*
	 * A stacktrace trigger also fires for events that the event filter
	 * then discards: it needs the filter too, or the buffer fills with
	 * stacks that belong to no recorded event.
	 */
	if (ev->filter)
		r = strprintf(&cmd, "stacktrace if %s", ev->filter);
	else
		r = strprintf(&cmd, "stacktrace");
	if (r < 0)
		return r;
	return tracing_change(t, path, cmd, "!stacktrace", false);
}

static int setup_enable(struct tracing *t, const struct config_event *ev)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX];
	int r;

	/*
	 * enable reads "0*" or "1*" while a trigger holds the event in soft
	 * mode (our stacktrace trigger does): only the digit says whether it
	 * records, and "0" is what turns it off again.
	 */
	r = event_value(t, ev, "enable", path, &cur);
	if (r < 0)
		return r;
	if (cur[0] == '1')
		return 0;
	return tracing_change(t, path, "1", "0", true);
}

/* Filter and trigger before enabling, so that no event is recorded without them. */
static int setup_event(struct tracing *t, const struct config_event *ev, bool trigger)
{
	int r;

	r = setup_filter(t, ev);
	if (r < 0)
		return r;
	if (trigger) {
		r = setup_trigger(t, ev);
		if (r < 0)
			return r;
	}
	return setup_enable(t, ev);
}

/*
 * Flight recorder trigger: the kernel's traceoff trigger stops the buffer
 * at the moment the event fires, so what led up to it stays in the buffer
 * until the daemon saves it (tracing_flight_triggered()).
 */
static int setup_flight_trigger(struct tracing *t)
{
	const char *spec = t->config->flight_trigger, *colon, *end;
	_cleanup_free_ char *cur = NULL, *cmd = NULL;
	char path[PATH_MAX];
	int r;

	if (!spec)
		return 0;
	colon = strchr(spec, ':');
	end = spec + strcspn(spec, " \t");
	if (!colon || colon > end)
		return -EINVAL;
	r = tracing_pathf(path, "%s/events/%.*s/%.*s/trigger", t->instance_dir, (int)(colon - spec), spec,
		  (int)(end - colon - 1), colon + 1);
	if (r < 0)
		return r;
	r = read_file(path, &cur, NULL);
	if (r < 0)
		return r;
	if (strstr(cur, "\ntraceoff") || startswith(cur, "traceoff"))
		return 0;
	/* "traceoff" or "traceoff if FILTER": the condition after the event name */
	r = strprintf(&cmd, "traceoff%s", end);
	if (r < 0)
		return r;
	return tracing_change(t, path, cmd, "!traceoff", false);
}

bool tracing_flight_triggered(struct tracing *t)
{
	_cleanup_free_ char *on = NULL;
	char path[PATH_MAX];

	assert(t);

	if (!t->config->flight_trigger || tracing_pathf(path, "%s/tracing_on", t->instance_dir) < 0 ||
	    tracing_read_value(path, &on) < 0)
		return false;
	return streq(on, "0");
}

int tracing_setup_events(struct tracing *t)
{
	const struct config *c;
	size_t mark;
	bool option_stacks = false;
	char path[PATH_MAX];
	int r;

	assert(t);

	c = t->config;
	mark = t->n_undo;
	/*
	 * A trigger set before its event is enabled fires in soft mode and
	 * records stacks without events: in an instance we created (it holds
	 * nothing yet) tracing stays off until everything is in place. An
	 * adopted instance keeps running, so that boot capture loses nothing.
	 */
	if (t->created) {
		r = tracing_pathf(path, "%s/tracing_on", t->instance_dir);
		if (r == 0)
			r = tracing_set_value(t, path, "0");
		if (r < 0)
			goto fail;
	}
	r = setup_options(t, &option_stacks);
	if (r < 0)
		goto fail;
	for (unsigned i = 0; i < c->nr_events; i++) {
		const struct config_event *ev = &c->events[i];

		r = setup_event(t, ev, !option_stacks && stack_expect_config(c, ev));
		if (r < 0)
			goto fail;
	}
	r = setup_flight_trigger(t);
	if (r < 0)
		goto fail;
	r = tracing_pathf(path, "%s/tracing_on", t->instance_dir);
	if (r < 0)
		goto fail;
	r = tracing_set_value(t, path, "1");
	if (r < 0)
		goto fail;
	return 0;

fail:
	tracing_undo_to(t, mark);
	return r;
}

/*
 * buffer_size_kb reads "N", "N (expanded: M)" while the top-level buffer
 * is still at its boot minimum (M is what it grows to when tracing
 * starts), or "X" when CPUs differ. Returns the effective size or 0 for X.
 */
static int parse_buffer_size(const char *s, uint64_t *ret)
{
	const char *exp = strstr(s, "(expanded:");
	char *end;

	if (streq(s, "X")) {
		*ret = 0;
		return 0;
	}
	if (exp)
		s = exp + strlen("(expanded:");
	errno = 0;
	*ret = strtoull(s, &end, 10);
	if (end == s || errno)
		return -EINVAL;
	return 0;
}

static int setup_buffer_size(struct tracing *t, uint64_t want)
{
	_cleanup_free_ char *cur = NULL, *subbuf = NULL;
	char path[PATH_MAX], value[32], old[32];
	uint64_t size, page_kb = 4;
	int r;

	r = tracing_pathf(path, "%s/buffer_subbuf_size_kb", t->instance_dir);
	if (r < 0)
		return r;
	if (tracing_read_value(path, &subbuf) >= 0)
		page_kb = MAX(strtoull(subbuf, NULL, 10), 1ULL);

	r = tracing_pathf(path, "%s/buffer_size_kb", t->instance_dir);
	if (r < 0)
		return r;
	r = tracing_read_value(path, &cur);
	if (r < 0)
		return r;
	r = parse_buffer_size(cur, &size);
	if (r < 0)
		return r;
	/* The kernel rounds up to whole sub-buffers: within one of them is the same size. */
	if (size >= want && size - want <= page_kb)
		return 0;

	if (size == 0) {
		/* Per-CPU sizes differ: remember each of them. */
		for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
			char cpath[PATH_MAX];
			_cleanup_free_ char *v = NULL;

			r = tracing_pathf(cpath, "%s/per_cpu/cpu%d/buffer_size_kb", t->instance_dir, cpu);
			if (r < 0)
				return r;
			if (tracing_read_value(cpath, &v) < 0)
				continue;
			r = tracing_undo_record(t, cpath, v, true);
			if (r < 0)
				return r;
		}
		(void)snprintf(value, sizeof(value), "%" PRIu64, want);
		return tracing_write_value(path, value, true);
	}

	(void)snprintf(value, sizeof(value), "%" PRIu64, want);
	(void)snprintf(old, sizeof(old), "%" PRIu64, size);
	return tracing_change(t, path, value, old, true);
}


static int setup_clock(struct tracing *t, const char *want)
{
	_cleanup_free_ char *text = NULL, *cur = NULL;
	char path[PATH_MAX];
	int r;

	r = tracing_pathf(path, "%s/trace_clock", t->instance_dir);
	if (r < 0)
		return r;
	r = tracing_read_value(path, &text);
	if (r < 0)
		return r;
	cur = tracing_parse_clock(text);
	if (!cur)
		return -EINVAL;
	if (streq(cur, want))
		return 0;
	return tracing_change(t, path, want, cur, true);
}

/* The configured sub-buffer size in KiB, or 0 when it stays as it is. */
static uint64_t subbuf_wanted(struct tracing *t)
{
	uint64_t want = t->config->subbuf_size_kb;
	char path[PATH_MAX];
	int have;

	if (!want || t->subbuf_refused)
		return 0;
	/* the default only where the kernel can change the size (Linux 6.8) */
	if (t->config->subbuf_size_auto &&
	    (tracing_pathf(path, "%s/buffer_subbuf_size_kb", t->instance_dir) < 0 ||
	     !tracing_exists(path)))
		return 0;
	have = tracing_page_size(t);
	return have > 0 && (uint64_t)have == want * 1024 ? 0 : want;
}

bool tracing_subbuf_pending(struct tracing *t)
{
	assert(t);
	return subbuf_wanted(t) != 0;
}

/*
 * The kernel keeps the buffer's size in bytes across a sub-buffer change
 * and rounds it up to whole sub-buffers each time: 354 pages of 4 KiB come
 * back from 16 KiB sub-buffers as 357. The size as it is now is put back
 * after the sub-buffer size (the log is undone newest first).
 */
static int remember_size_for_subbuf(struct tracing *t)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX], value[32];
	uint64_t size;
	int r;

	r = tracing_pathf(path, "%s/buffer_size_kb", t->instance_dir);
	if (r < 0)
		return r;
	if (tracing_read_value(path, &cur) < 0 || parse_buffer_size(cur, &size) < 0 || size == 0)
		return 0;	/* per-CPU sizes differ: as they are */
	(void)snprintf(value, sizeof(value), "%" PRIu64, size);
	return tracing_undo_record(t, path, value, true);
}

int tracing_setup_subbuf(struct tracing *t)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX], value[32];
	uint64_t want;
	size_t mark;
	int r;

	assert(t);

	want = subbuf_wanted(t);
	mark = t->n_undo;
	if (!want)
		return 0;
	r = tracing_pathf(path, "%s/buffer_subbuf_size_kb", t->instance_dir);
	if (r < 0)
		return r;
	r = tracing_read_value(path, &cur);
	if (r == -ENOENT)
		return -EOPNOTSUPP;
	if (r < 0)
		return r;
	r = remember_size_for_subbuf(t);
	if (r < 0)
		return r;
	(void)snprintf(value, sizeof(value), "%" PRIu64, want);
	r = tracing_change(t, path, value, cur, true);
	if (r < 0 && t->config->subbuf_size_auto && r != -ENOMEM) {
		/* the default is only a default: the kernel's own size will do */
		tracing_undo_to(t, mark);
		t->subbuf_refused = -r;
		return 0;
	}
	return r < 0 ? r : 1;
}

int tracing_subbuf_refused(struct tracing *t)
{
	assert(t);
	return t->subbuf_refused;
}

int tracing_setup_buffer(struct tracing *t)
{
	const struct config *c;
	size_t mark;
	int r = 0;

	assert(t);

	c = t->config;
	mark = t->n_undo;
	if (c->buffer_size_kb > 0)
		r = setup_buffer_size(t, c->buffer_size_kb);
	if (r >= 0 && c->clock && *c->clock)
		r = setup_clock(t, c->clock);
	if (r < 0)
		tracing_undo_to(t, mark);
	return r < 0 ? r : 0;
}


int tracing_exclude_pids(struct tracing *t, const int *pids, size_t n)
{
	_cleanup_free_ char *old = NULL;
	char path[PATH_MAX];
	struct buf next = { 0 };
	int r;

	assert(t);
	assert(pids || n == 0);

	r = tracing_pathf(path, "%s/set_event_notrace_pid", t->instance_dir);
	if (r < 0)
		return r;
	if (!tracing_exists(path))
		return -EOPNOTSUPP;
	r = tracing_read_value(path, &old);
	if (r < 0)
		return r;
	/* the file lists one pid per line; writing accepts any white space */
	for (char *p = old; *p; p++)
		if (*p == '\n')
			*p = ' ';
	r = buf_printf(&next, "%s", old);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = buf_printf(&next, " %d", pids[i]);
	if (r == 0)
		r = tracing_change(t, path, (const char *)next.data, old, true);
	buf_done(&next);
	return r;
}

