/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The table of configuration keys and the parser of each: one row per
 * (section, key) with its field in struct config, its range, its choices
 * and whether a change needs a tracing restart. Each parser checks syntax,
 * unit and range and says what is wrong in words a user can act on; what
 * only the running kernel can tell (does the event or clock exist) is left
 * to the daemon's checks.
 */
#include <ctype.h>
#include <grp.h>
#include <inttypes.h>
#include <stddef.h>
#include <sys/un.h>

#include "config.h"
#include "config-internal.h"
#include "filter-grammar.h"
#include "util.h"

/* Indexed by the enums in config.h. */
static const char *const stackmap_names[] = { "auto", "on", "off", NULL };
static const char *const reset_mode_names[] = { "lossless", "strict", NULL };
static const char *const frame_encoding_names[] = { "columns", "pages", NULL };
static const char *const stack_time_names[] = { "own", "event", NULL };
static const char *const record_mode_names[] = { "stream", "flight", NULL };

#define FIELD(type) (*(type *)field)

static int range_msg(const struct config_key *k, const char *v, char **m, bool size)
{
	char a[32], b[32];
	const char *(*fmt)(uint64_t, char *) = size ? config_format_size : config_format_duration;

	if (k->max == UINT64_MAX)
		return strprintf(m, "'%s' is too small (at least %s%s)", v, fmt(k->min, a),
				 k->zero_off ? ", or 0 for no limit" : "") ?: -EINVAL;
	return strprintf(m, "'%s' is out of range (%s..%s%s)", v, fmt(k->min, a), fmt(k->max, b),
			 k->zero_off ? ", or 0 to disable" : "") ?: -EINVAL;
}

static int parse_instance(struct parse_state *s, const struct config_key *k, const char *v,
			  void *field, char **m)
{
	if (*v && (!config_valid_name(v, strlen(v), ".-") || streq(v, ".") || streq(v, "..") ||
		   strlen(v) > 64))
		return strprintf(m, "'%s' is not an instance name (letters, digits, '_', '-', "
				 "'.', at most 64; empty for the top-level instance)", v) ?:
			-EINVAL;
	return config_replace_string(&FIELD(char *), v);
}

static int parse_deferred(struct parse_state *s, const struct config_key *k, const char *v,
			  void *field, char **m)
{
	return config_replace_string(streq(k->name, "events") ? &s->events : &s->stacktrace, v);
}

static int parse_buffer_size(struct parse_state *s, const struct config_key *k, const char *v,
			     void *field, char **m)
{
	uint64_t bytes;
	int r;

	if (!*v) {
		FIELD(uint64_t) = 0;
		return 0;
	}
	r = config_parse_size(v, &bytes);
	if (r < 0)
		return strprintf(m, "'%s' is not a size (use K, M, G; empty to leave the kernel's "
				 "buffer size as it is)", v) ?: -EINVAL;
	if (bytes < k->min || bytes > k->max)
		return range_msg(k, v, m, true);
	if (bytes % KB)
		return strprintf(m, "'%s' is not a whole number of kilobytes", v) ?: -EINVAL;
	FIELD(uint64_t) = bytes / KB;
	return 0;
}

static int parse_clock(struct parse_state *s, const struct config_key *k, const char *v,
		       void *field, char **m)
{
	if (!*v)
		return config_replace_string(&FIELD(char *), NULL);
	if (!config_valid_name(v, strlen(v), "-"))
		return strprintf(m, "'%s' is not a clock name", v) ?: -EINVAL;
	return config_replace_string(&FIELD(char *), v);
}

int config_trigger_split(const char *spec, char **ret_system, char **ret_event,
			 const char **ret_filter)
{
	const char *colon = strchr(spec, ':'), *end = spec + strcspn(spec, " \t"), *filter = NULL;
	_cleanup_free_ char *system = NULL, *event = NULL;

	if (*end) {
		filter = end + strspn(end, " \t");
		if (!startswith(filter, "if ") && !startswith(filter, "if\t"))
			return -EINVAL;
		filter += 3;
		filter += strspn(filter, " \t");
	}
	if (!colon || colon == spec || colon + 1 >= end ||
	    !config_valid_name(spec, (size_t)(colon - spec), "") ||
	    !config_valid_name(colon + 1, (size_t)(end - colon - 1), ""))
		return -EINVAL;
	system = strndup(spec, (size_t)(colon - spec));
	event = strndup(colon + 1, (size_t)(end - colon - 1));
	if (!system || !event)
		return -ENOMEM;
	*ret_system = steal_ptr(system);
	*ret_event = steal_ptr(event);
	*ret_filter = filter;
	return 0;
}

/*
 * "SYSTEM:EVENT" or "SYSTEM:EVENT if FILTER" (the filter's structure is
 * checked here, the event and its fields against the kernel by the
 * daemon); "" for none.
 */
static int parse_trigger(struct parse_state *s, const struct config_key *k, const char *v,
			 void *field, char **m)
{
	_cleanup_free_ char *system = NULL, *event = NULL, *err = NULL;
	const char *end, *filter, *cond;
	int r;

	if (!*v)
		return config_replace_string(&FIELD(char *), NULL);
	end = v + strcspn(v, " \t");
	cond = end + strspn(end, " \t");
	if (*end && !startswith(cond, "if ") && !startswith(cond, "if\t"))
		return strprintf(m, "'%s': expected 'system:event' or 'system:event if FILTER'",
				 v) ?: -EINVAL;
	r = config_trigger_split(v, &system, &event, &filter);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return strprintf(m, "'%.*s' is not system:event (e.g. oom:mark_victim)",
				 (int)(end - v), v) ?: -EINVAL;
	if (filter && !*filter)
		return strprintf(m, "'%s': empty filter after 'if'", v) ?: -EINVAL;
	if (filter) {
		r = filter_grammar_check(NULL, filter, &err);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return strprintf(m, "filter '%s': %s", filter, err) ?: -EINVAL;
	}
	return config_replace_string(&FIELD(char *), v);
}

static int parse_enum(struct parse_state *s, const struct config_key *k, const char *v,
		      void *field, char **m)
{
	_cleanup_free_ char *list = NULL;

	for (int i = 0; k->choices[i]; i++)
		if (streq(v, k->choices[i])) {
			FIELD(int) = i;
			return 0;
		}
	for (int i = 0; k->choices[i]; i++) {
		char *n = NULL;

		if (strprintf(&n, "%s%s%s", list ?: "", list ? ", " : "", k->choices[i]) < 0)
			return -ENOMEM;
		free(list);
		list = n;
	}
	return strprintf(m, "'%s' is not one of: %s", v, list) ?: -EINVAL;
}

static int parse_boolean(struct parse_state *s, const struct config_key *k, const char *v,
			 void *field, char **m)
{
	if (config_parse_bool(v, &FIELD(bool)) < 0)
		return strprintf(m, "'%s' is not a boolean (use yes or no)", v) ?: -EINVAL;
	return 0;
}

static int parse_dur(struct parse_state *s, const struct config_key *k, const char *v,
		     void *field, char **m)
{
	uint64_t usec;
	const char *p = v;

	if (config_parse_duration(v, &usec) < 0) {
		while (isdigit((unsigned char)*p))
			p++;
		if (*v && !*p)
			return strprintf(m, "'%s' has no unit (add ms, s, min, h or d)", v) ?:
				-EINVAL;
		return strprintf(m, "'%s' is not a duration (use ms, s, min, h or d, e.g. 30s)",
				 v) ?: -EINVAL;
	}
	if ((usec < k->min || usec > k->max) && !(usec == 0 && k->zero_off))
		return range_msg(k, v, m, false);
	FIELD(uint64_t) = usec;
	return 0;
}

static int parse_percent(struct parse_state *s, const struct config_key *k, const char *v,
			 void *field, char **m)
{
	const char *p = v;
	uint64_t n;

	if (config_parse_number(&p, &n) < 0 || (*p == '%' ? p[1] != '\0' : *p != '\0'))
		return strprintf(m, "'%s' is not a percentage", v) ?: -EINVAL;
	if (n < k->min || n > k->max)
		return strprintf(m, "'%s' is out of range (%" PRIu64 "..%" PRIu64 "%%)", v, k->min,
				 k->max) ?: -EINVAL;
	FIELD(unsigned) = (unsigned)n;
	return 0;
}

static int parse_count(struct parse_state *s, const struct config_key *k, const char *v,
		       void *field, char **m)
{
	const char *p = v;
	uint64_t n;
	int r;

	r = config_parse_number(&p, &n);
	if (r == -ERANGE && !*p)
		return strprintf(m, "'%s' is too large", v) ?: -EINVAL;
	if (r < 0 || *p)
		return strprintf(m, "'%s' is not a whole number", v) ?: -EINVAL;
	if ((n < k->min || n > k->max) && !(n == 0 && k->zero_off))
		return strprintf(m, "'%s' is out of range (%" PRIu64 "..%" PRIu64 "%s)", v, k->min,
				 k->max, k->zero_off ? ", or 0 for no limit" : "") ?: -EINVAL;
	if (k->type == FIELD_U64)
		FIELD(uint64_t) = n;
	else if (k->type == FIELD_UNSIGNED)
		FIELD(unsigned) = (unsigned)n;
	else
		FIELD(int) = (int)n;	/* ranges in the table keep it within int */
	return 0;
}

static int parse_sz(struct parse_state *s, const struct config_key *k, const char *v,
		    void *field, char **m)
{
	uint64_t bytes;
	int r;

	r = config_parse_size(v, &bytes);
	if (r == -ERANGE)
		return strprintf(m, "'%s' is too large", v) ?: -EINVAL;
	if (r < 0)
		return strprintf(m, "'%s' is not a size (use K, M, G, T)", v) ?: -EINVAL;
	if ((bytes < k->min || bytes > k->max) && !(bytes == 0 && k->zero_off))
		return range_msg(k, v, m, true);
	FIELD(uint64_t) = bytes;
	return 0;
}

static int parse_abs_path(struct parse_state *s, const struct config_key *k, const char *v,
			  void *field, char **m)
{
	if (v[0] != '/')
		return strprintf(m, "'%s' is not an absolute path", v) ?: -EINVAL;
	if (field == &s->c->socket_path && strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return strprintf(m, "'%s' is longer than a unix socket path can be (%zu bytes)", v,
				 sizeof(((struct sockaddr_un *)0)->sun_path) - 1) ?: -EINVAL;
	return config_replace_string(&FIELD(char *), v);
}

static int parse_hook(struct parse_state *s, const struct config_key *k, const char *v,
		      void *field, char **m)
{
	char **argv = NULL;
	int r;

	if (!*v) {
		config_strv_free(s->c->hook_argv);
		s->c->hook_argv = NULL;
		return config_replace_string(&FIELD(char *), NULL);
	}
	if (v[0] != '/')
		return strprintf(m, "'%s' must start with the absolute path of a program", v) ?:
			-EINVAL;
	r = config_split_words(v, &argv);
	if (r < 0)
		return r;
	config_strv_free(s->c->hook_argv);
	s->c->hook_argv = argv;
	return config_replace_string(&FIELD(char *), v);
}

static int parse_group(struct parse_state *s, const struct config_key *k, const char *v,
		       void *field, char **m)
{
	if (!*v)
		return config_replace_string(&FIELD(char *), NULL);
	errno = 0;
	if (!getgrnam(v)) {
		if (errno != 0 && errno != ENOENT && errno != ESRCH)
			return strprintf(m, "cannot look up group '%s': %s", v, strerror(errno)) ?:
				-EINVAL;
		return strprintf(m, "group '%s' does not exist", v) ?: -EINVAL;
	}
	return config_replace_string(&FIELD(char *), v);
}

#define CFG_FIELD(f) offsetof(struct config, f)
/*
 * A sub-buffer: a power of two the kernel takes (its pages, order 0 to 7),
 * or auto: the default where the kernel can change it.
 */
static int parse_subbuf_size(struct parse_state *s, const struct config_key *k, const char *v,
			     void *field, char **m)
{
	uint64_t kb;
	int r;

	s->c->subbuf_size_auto = streq(v, "auto");
	if (s->c->subbuf_size_auto) {
		FIELD(uint64_t) = CONFIG_SUBBUF_DEFAULT_KB;
		return 0;
	}
	/* a size, or empty: as it is */
	r = parse_buffer_size(s, k, v, field, m);
	kb = FIELD(uint64_t);
	if (r < 0)
		return r;
	if (kb == 0)
		return 0;
	if (kb & (kb - 1))
		return strprintf(m, "'%s' is not a power of two (4K, 8K, ... 512K)", v) ?: -EINVAL;
	return 0;
}

#define KEY(sec, key, fn, type_, off, ...)                                              \
	{ .section = sec, .name = key, .parse = fn, .type = type_, .offset = off, __VA_ARGS__ }
#define RANGE(a, b) .min = (a), .max = (b)

const struct config_key config_keys[] = {
	KEY("trace", "instance", parse_instance, FIELD_STRING, CFG_FIELD(instance),
	    .restart = true),
	KEY("trace", "events", parse_deferred, FIELD_DEFERRED, 0, .restart = true),
	KEY("trace", "stacktrace", parse_deferred, FIELD_DEFERRED, 0, .restart = true),
	KEY("trace", "buffer_size", parse_buffer_size, FIELD_U64, CFG_FIELD(buffer_size_kb),
	    RANGE(4 * KB, 1 * GB), .restart = true),
	KEY("trace", "subbuf_size", parse_subbuf_size, FIELD_U64, CFG_FIELD(subbuf_size_kb),
	    RANGE(4 * KB, 512 * KB), .restart = true),
	KEY("trace", "clock", parse_clock, FIELD_STRING, CFG_FIELD(clock), .restart = true),
	KEY("trace", "stackmap", parse_enum, FIELD_ENUM, CFG_FIELD(stackmap),
	    .choices = stackmap_names, .restart = true),
	KEY("trace", "keep_tracing", parse_boolean, FIELD_BOOL, CFG_FIELD(keep_tracing)),
	KEY("trace", "mode", parse_enum, FIELD_ENUM, CFG_FIELD(record_mode),
	    .choices = record_mode_names, .restart = true),
	KEY("trace", "flight_trigger", parse_trigger, FIELD_STRING, CFG_FIELD(flight_trigger),
	    .restart = true),

	KEY("stackmap", "snapshot_interval", parse_dur, FIELD_U64,
	    CFG_FIELD(snapshot_interval_usec), RANGE(100 * MSEC, DAY)),
	KEY("stackmap", "reset_fill", parse_percent, FIELD_UNSIGNED, CFG_FIELD(reset_fill_percent),
	    RANGE(0, 100)),
	KEY("stackmap", "reset_drops", parse_count, FIELD_U64, CFG_FIELD(reset_drops),
	    RANGE(0, UINT64_MAX)),
	KEY("stackmap", "reset_interval", parse_dur, FIELD_U64, CFG_FIELD(reset_interval_usec),
	    RANGE(100 * MSEC, 30 * DAY), .zero_off = true),
	KEY("stackmap", "reset_mode", parse_enum, FIELD_ENUM, CFG_FIELD(reset_mode),
	    .choices = reset_mode_names),
	KEY("stackmap", "reset_guard", parse_dur, FIELD_U64, CFG_FIELD(reset_guard_usec),
	    RANGE(0, SEC)),
	KEY("stackmap", "reset_realtime", parse_boolean, FIELD_BOOL, CFG_FIELD(reset_realtime)),

	KEY("archive", "directory", parse_abs_path, FIELD_STRING, CFG_FIELD(directory)),
	KEY("archive", "compression_level", parse_count, FIELD_INT, CFG_FIELD(compression_level),
	    RANGE(1, 19)),
	KEY("archive", "frame_size", parse_sz, FIELD_U64, CFG_FIELD(frame_size),
	    RANGE(64 * KB, 16 * MB)),
	KEY("archive", "frame_encoding", parse_enum, FIELD_ENUM, CFG_FIELD(frame_encoding),
	    .choices = frame_encoding_names),
	KEY("archive", "stack_time", parse_enum, FIELD_ENUM, CFG_FIELD(stack_time),
	    .choices = stack_time_names, .restart = true),
	KEY("archive", "segment_size", parse_sz, FIELD_U64, CFG_FIELD(segment_size),
	    RANGE(1 * MB, 64 * GB), .zero_off = true),
	KEY("archive", "segment_age", parse_dur, FIELD_U64, CFG_FIELD(segment_age_usec),
	    RANGE(SEC, 30 * DAY), .zero_off = true),
	KEY("archive", "max_size", parse_sz, FIELD_U64, CFG_FIELD(max_size),
	    RANGE(1 * MB, UINT64_MAX), .zero_off = true),
	KEY("archive", "max_segments", parse_count, FIELD_UNSIGNED, CFG_FIELD(max_segments),
	    RANGE(2, UINT32_MAX), .zero_off = true),
	KEY("archive", "keep_free", parse_percent, FIELD_UNSIGNED, CFG_FIELD(keep_free_percent),
	    RANGE(0, 90)),
	KEY("archive", "sync", parse_boolean, FIELD_BOOL, CFG_FIELD(sync)),
	KEY("archive", "hook", parse_hook, FIELD_STRING, CFG_FIELD(hook)),

	KEY("control", "socket", parse_abs_path, FIELD_STRING, CFG_FIELD(socket_path),
	    .restart = true),
	KEY("control", "group", parse_group, FIELD_STRING, CFG_FIELD(socket_group)),

	KEY("service", "status_interval", parse_dur, FIELD_U64, CFG_FIELD(status_interval_usec),
	    RANGE(SEC, DAY)),

	KEY("crash", "buffer_size", parse_sz, FIELD_U64, CFG_FIELD(crash_buffer_size),
	    RANGE(1 * MB, 4 * GB), .zero_off = true, .restart = true),
	KEY("crash", "clock_interval", parse_dur, FIELD_U64, CFG_FIELD(crash_clock_interval_usec),
	    RANGE(100 * MSEC, 10 * MINUTE)),
};

const size_t config_nr_keys = ARRAY_SIZE(config_keys);
_Static_assert(ARRAY_SIZE(config_keys) <= CONFIG_MAX_KEYS, "CONFIG_MAX_KEYS is too small");
