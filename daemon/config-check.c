/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration against the running kernel: each event named in
 * trace.events and trace.flight_trigger exists, each filter fits its
 * event's format (fields, operators, kinds of values, with the grammar of
 * lib/config/filter-grammar.c), trace.clock is offered in trace_clock, and
 * stackmap = on finds a stack map. It only reads tracefs, so that
 * "stackmapd --check", startup (before anything is changed) and reload
 * all run this same code, and it names the file, line and key that the
 * parser recorded, as the parser's own messages do.
 */
#include <assert.h>
#include <stdarg.h>
#include <sys/stat.h>

#include <event-parse.h>

#include "config.h"
#include "config-check.h"
#include "filter-grammar.h"
#include "util.h"

struct checker {
	const struct config *c;		/* borrowed */
	const char *dir;		/* top-level tracefs directory */
	const char *instance_dir;	/* NULL: the instance does not exist yet */
	char *error;
};

/* Record "PATH[:LINE]: KEY: message" as the error. Returns -EINVAL or -ENOMEM. */
static int check_fail(struct checker *ch, const char *key, unsigned line, const char *fmt, ...)
	_printf_(4, 5);
static int check_fail(struct checker *ch, const char *key, unsigned line, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	char where[32] = "";
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vstrprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return r;
	if (line)
		(void)snprintf(where, sizeof(where), ":%u", line);
	if (strprintf(&ch->error, "%s%s: %s: %s", ch->c->path ?: "defaults", where, key, msg) < 0)
		return -ENOMEM;
	return -EINVAL;
}

/* The event's directory exists in the top-level tree (every instance has the same events). */
static int check_event(struct checker *ch, const char *system, const char *name,
		       const char *key, unsigned line)
{
	_cleanup_free_ char *dir = NULL;
	struct stat st;

	if (strprintf(&dir, "%s/events/%s/%s", ch->dir, system, name) < 0)
		return -ENOMEM;
	errno = 0;
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (errno == ENOENT || errno == ENOTDIR || errno == 0)
		return check_fail(ch, key, line, "event '%s:%s' does not exist (no %s)", system,
				  name, dir);
	return check_fail(ch, key, line, "cannot check event '%s:%s': %s: %s", system, name, dir,
			  strerror(errno));
}

static int check_events(struct checker *ch)
{
	const struct config *c = ch->c;
	unsigned line = config_key_line(c, "trace.events");
	int r;

	for (unsigned i = 0; i < c->nr_events; i++) {
		const struct config_event *ev = &c->events[i];
		_cleanup_free_ char *key = NULL, *msg = NULL;

		r = check_event(ch, ev->system, ev->name, "trace.events", line);
		if (r < 0)
			return r;
		if (!ev->filter)
			continue;
		if (strprintf(&key, "trace.filter.%s:%s", ev->system, ev->name) < 0)
			return -ENOMEM;
		r = config_check_filter(ch->dir, ev->system, ev->name, ev->filter, &msg);
		if (r == -ENOMEM || (r < 0 && !msg))
			return -ENOMEM;
		if (r < 0)
			return check_fail(ch, key, ev->filter_line, "%s", msg);
	}
	return 0;
}

static int check_flight_trigger(struct checker *ch)
{
	const char *spec = ch->c->flight_trigger, *key = "trace.flight_trigger", *filter;
	_cleanup_free_ char *system = NULL, *event = NULL, *msg = NULL;
	unsigned line = config_key_line(ch->c, key);
	int r;

	if (!spec)
		return 0;
	r = config_trigger_split(spec, &system, &event, &filter);
	if (r == -EINVAL)
		return check_fail(ch, key, line, "'%s' is not system:event", spec);
	if (r < 0)
		return r;
	r = check_event(ch, system, event, key, line);
	if (r < 0 || !filter)
		return r;
	r = config_check_filter(ch->dir, system, event, filter, &msg);
	if (r == -ENOMEM || (r < 0 && !msg))
		return -ENOMEM;
	if (r < 0)
		return check_fail(ch, key, line, "filter '%s': %s", filter, msg);
	return 0;
}

/* trace_clock lists the clocks, the current one in brackets: "[local] global counter ...". */
static int check_clock(struct checker *ch)
{
	const char *want = ch->c->clock, *key = "trace.clock";
	unsigned line = config_key_line(ch->c, key);
	_cleanup_free_ char *path = NULL, *text = NULL;
	size_t len = want ? strlen(want) : 0;
	int r;

	if (!want || !*want)
		return 0;
	if (strprintf(&path, "%s/trace_clock", ch->dir) < 0)
		return -ENOMEM;
	r = read_file(path, &text, NULL);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return check_fail(ch, key, line, "cannot read '%s': %s", path, strerror(-r));
	for (const char *p = text; *p;) {
		size_t n;

		p += strspn(p, " \t\n[]");
		n = strcspn(p, " \t\n[]");
		if (n == len && strncmp(p, want, len) == 0)
			return 0;
		p += n;
	}
	text[strcspn(text, "\n")] = '\0';
	return check_fail(ch, key, line, "'%s' is not a trace clock of this kernel (available: %s)",
			  want, text);
}

static bool has_file(const char *dir, const char *name)
{
	_cleanup_free_ char *path = NULL;

	return strprintf(&path, "%s/%s", dir, name) >= 0 && access(path, F_OK) == 0;
}

static int check_stackmap(struct checker *ch)
{
	const struct config *c = ch->c;
	const char *key = "trace.stackmap";
	unsigned line = config_key_line(c, key);

	if (c->stackmap != CONFIG_STACKMAP_ON)
		return 0;
	if (!has_file(ch->dir, "stack_map") || !has_file(ch->dir, "options/stackmap"))
		return check_fail(ch, key, line, "stackmap = on but this kernel has no stackmap "
				  "(no stack_map in %s)", ch->dir);
	if (ch->instance_dir && !has_file(ch->instance_dir, "options/stackmap"))
		return check_fail(ch, key, line, "stackmap = on but instance '%s' has no "
				  "options/stackmap (the kernel has a stack map for the top-level "
				  "instance only)", c->instance ?: "");
	return 0;
}

/* A sub-buffer size other than one page needs buffer_subbuf_size_kb (Linux 6.8). */
static int check_subbuf(struct checker *ch)
{
	const struct config *c = ch->c;
	const char *key = "trace.subbuf_size";

	/* auto asks for the default only where the kernel can change the size */
	if (!c->subbuf_size_kb || c->subbuf_size_auto ||
	    c->subbuf_size_kb * 1024 == (uint64_t)getpagesize() ||
	    has_file(ch->dir, "buffer_subbuf_size_kb"))
		return 0;
	return check_fail(ch, key, config_key_line(c, key),
			  "this kernel cannot change the ring buffer's sub-buffer size "
			  "(no buffer_subbuf_size_kb: Linux 6.8 or later)");
}

int config_check_tracefs(const struct config *c, const char *tracing_dir,
			 const char *instance_dir, char **ret_error)
{
	struct checker ch = { .c = c, .dir = tracing_dir, .instance_dir = instance_dir };
	int r = 0;

	assert(c);

	if (instance_dir && !has_file(instance_dir, "events"))
		r = check_fail(&ch, "trace.instance", config_key_line(c, "trace.instance"),
			       "'%s' is not a tracing instance (it has no events/)", instance_dir);
	if (r >= 0)
		r = check_events(&ch);
	if (r >= 0)
		r = check_flight_trigger(&ch);
	if (r >= 0)
		r = check_clock(&ch);
	if (r >= 0)
		r = check_stackmap(&ch);
	if (r >= 0)
		r = check_subbuf(&ch);
	if (r < 0 && ret_error)
		*ret_error = steal_ptr(ch.error);
	free(ch.error);
	return r < 0 ? r : 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC_NONNULL(struct tep_handle *, tep_free);

/* Parse events/SYSTEM/EVENT/format into tep; *ret_event is owned by tep. */
static int load_format(const char *tracing_dir, const char *system, const char *event,
		       struct tep_handle *tep, struct tep_event **ret_event, char **ret_error)
{
	_cleanup_free_ char *path = NULL, *format = NULL;
	struct tep_event *e = NULL;
	size_t len;
	int r;

	r = strprintf(&path, "%s/events/%s/%s/format", tracing_dir, system, event);
	if (r < 0)
		return r;
	r = read_file(path, &format, &len);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return strprintf(ret_error, "cannot read '%s': %s", path, strerror(-r)) ?: -EINVAL;
	/* libtraceevent 1.7 dereferences the event pointer unconditionally. */
	if (tep_parse_format(tep, &e, format, len, system) != 0 || !e)
		return strprintf(ret_error, "cannot parse '%s'", path) ?: -EINVAL;
	*ret_event = e;
	return 0;
}

int config_check_filter(const char *tracing_dir, const char *system, const char *event,
			const char *expr, char **ret_error)
{
	_cleanup_(tep_freep) struct tep_handle *tep = NULL;
	_cleanup_free_ char *msg = NULL;
	struct tep_event *e = NULL;
	int r;

	assert(expr);

	/* An empty filter is wrong whatever the format says. */
	if (tracing_dir && *expr) {
		tep = tep_alloc();
		if (!tep)
			return -ENOMEM;
		r = load_format(tracing_dir, system, event, tep, &e, &msg);
		if (r < 0)
			goto out;
	}
	r = filter_grammar_check(e, expr, &msg);
out:
	if (r < 0 && ret_error)
		*ret_error = steal_ptr(msg);
	return r;
}
