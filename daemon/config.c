/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration file: defaults, parsing with inih, per-key validation
 * through one table, rules that span keys, reload comparison, and the
 * equivalent kernel command line.
 *
 * inih is fed through our own line reader (ini_parse_stream) rather than
 * ini_parse(): the reader counts lines, so every message carries the line
 * it is about, and it sees each raw line, which lets us reject what inih
 * would quietly reinterpret: an indented line continues the previous
 * value (we allow that only for the lists events and stacktrace, since
 * inih, as built by distributions, reads at most 200 bytes a line); a
 * "key: value" line is split at the ':', which would also cut
 * "filter.kmem:kmalloc = ..." in two (we split at '=' ourselves); an
 * over-long line is read in pieces (we report it).
 */
#include <ctype.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <ini.h>

#include "config.h"
#include "util.h"

#ifndef ARCHIVEDIR
#define ARCHIVEDIR "/var/lib/stackmapd"
#endif
#ifndef RUNSTATEDIR
#define RUNSTATEDIR "/run"
#endif

#define DEFAULT_EVENTS "kmem:kmem_cache_alloc kmem:kmalloc"
#define DEFAULT_SOCKET RUNSTATEDIR "/stackmapd/control"

#define MAX_KEYS 32

/* The kernel keeps at most this many trace_trigger= entries (MAX_BOOT_TRIGGERS). */
#define BOOT_MAX_TRIGGERS 32

#define KB UINT64_C(1024)
#define MB (KB * 1024)
#define GB (MB * 1024)
#define MSEC USEC_PER_MSEC
#define SEC USEC_PER_SEC
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)

static const char *const sections[] = { "trace", "stackmap", "archive", "control", "service" };

/* Indexed by the enums in config.h. */
static const char *const stackmap_names[] = { "auto", "on", "off", NULL };
static const char *const reset_mode_names[] = { "lossless", "strict", NULL };
static const char *const frame_encoding_names[] = { "columns", "pages", NULL };
static const char *const record_mode_names[] = { "stream", "flight", NULL };

struct parse_state;
struct key;

/*
 * A value parser: check value and store it in field. On a bad value return
 * -EINVAL (or -ERANGE) with *ret_msg saying what is wrong (without the
 * PATH:LINE: KEY: prefix); -ENOMEM without a message.
 */
typedef int (*parse_fn)(struct parse_state *s, const struct key *k, const char *value,
			void *field, char **ret_msg);

enum field_type {
	FIELD_STRING,		/* char *, may be NULL */
	FIELD_U64,
	FIELD_UNSIGNED,
	FIELD_INT,
	FIELD_BOOL,
	FIELD_ENUM,		/* stored as an int-sized enum */
	FIELD_DEFERRED,		/* events, stacktrace: resolved after the whole file is read */
};

struct key {
	const char *section;
	const char *name;
	parse_fn parse;
	enum field_type type;
	size_t offset;
	uint64_t min, max;	/* range for numbers, sizes and durations */
	bool zero_off;		/* 0 is accepted below min and means "off" */
	const char *const *choices;
	bool restart;		/* a change needs a tracing restart */
};

struct filter_def {
	char *event;		/* "system:name" as written after "filter." */
	char *expr;
	unsigned line;
};

struct parse_state {
	struct config *c;
	const char *name;		/* file name for messages */
	const char *tracing_dir;	/* NULL: nothing is checked against tracefs */

	const char *next;		/* reader position in the text */
	unsigned line;			/* number of the line the reader returned last */
	const char *raw;		/* that line, unmodified (inih edits its copy) */
	size_t raw_len;

	const char *list_key;		/* last line set events or stacktrace: it may continue */
	bool continuation;		/* the current line continues list_key */

	unsigned seen[MAX_KEYS];	/* line each key of keys[] was set on, 0 = not set */
	char *events;			/* raw values of the deferred keys */
	char *stacktrace;
	struct filter_def *filters;
	unsigned nr_filters;

	char *error;			/* the first error, complete message */
	int error_r;
};

/* ---- small helpers ---- */

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f' || ch == '\v';
}

static const char *skip_blank(const char *p)
{
	while (*p && is_blank(*p))
		p++;
	return p;
}

/* Copy [p, p+len) without surrounding white space. */
static char *strndup_trimmed(const char *p, size_t len)
{
	while (len > 0 && is_blank(*p)) {
		p++;
		len--;
	}
	while (len > 0 && is_blank(p[len - 1]))
		len--;
	return strndup(p, len);
}

static int replace_string(char **field, const char *value)
{
	char *copy = NULL;

	if (value) {
		copy = strdup(value);
		if (!copy)
			return -ENOMEM;
	}
	free(*field);
	*field = copy;
	return 0;
}

/* "64M", "1G", "512K" or plain bytes: the largest unit that divides exactly. */
static const char *format_size(uint64_t v, char buf[static 32])
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v != 0 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		(void)snprintf(buf, 32, "%" PRIu64, v);
	else
		(void)snprintf(buf, 32, "%" PRIu64 "%c", v, units[u]);
	return buf;
}

static const struct {
	const char *name;
	uint64_t usec;
} duration_units[] = {
	{ "d", DAY }, { "h", HOUR }, { "min", MINUTE }, { "s", SEC }, { "ms", MSEC }, { "us", 1 },
};

/* "10s", "1d", "500ms": the largest unit that divides exactly. */
static const char *format_duration(uint64_t usec, char buf[static 32])
{
	if (usec == 0) {
		(void)snprintf(buf, 32, "0");
		return buf;
	}
	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++)
		if (usec % duration_units[i].usec == 0) {
			(void)snprintf(buf, 32, "%" PRIu64 "%s", usec / duration_units[i].usec,
				       duration_units[i].name);
			break;
		}
	return buf;
}

static int append_word(char **list, const char *sep, const char *word)
{
	char *n = NULL;

	if (strprintf(&n, "%s%s%s", *list ?: "", *list ? sep : "", word) < 0)
		return -ENOMEM;
	free(*list);
	*list = n;
	return 0;
}

/* Names of systems, events and instances as tracefs spells them. */
static bool valid_name(const char *s, size_t len, const char *extra)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && !(extra && strchr(extra, s[i])))
			return false;
	return true;
}

/* ---- exported parsers ---- */

/* Decimal digits at *p (all of them are consumed, also on overflow). */
static int parse_number(const char **p, uint64_t *ret)
{
	bool overflow = false;
	uint64_t v = 0;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	for (; isdigit((unsigned char)**p); (*p)++) {
		unsigned d = (unsigned)(**p - '0');

		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	if (overflow)
		return -ERANGE;
	*ret = v;
	return 0;
}

int config_parse_size(const char *s, uint64_t *ret)
{
	const char *p = s;
	unsigned shift = 0;
	uint64_t v;
	int r;

	r = parse_number(&p, &v);
	if (r < 0)
		return r;
	switch (*p) {
	case 'K': case 'k': shift = 10; p++; break;
	case 'M': case 'm': shift = 20; p++; break;
	case 'G': case 'g': shift = 30; p++; break;
	case 'T': case 't': shift = 40; p++; break;
	default: break;
	}
	if (*p == 'B')
		p++;
	if (*p)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

int config_parse_duration(const char *s, uint64_t *ret_usec)
{
	const char *p = s;
	uint64_t v;
	int r;

	r = parse_number(&p, &v);
	if (r < 0)
		return r;
	if (*p == '\0') {
		/* A bare number has no unit; only 0 means the same in every unit. */
		if (v != 0)
			return -EINVAL;
		*ret_usec = 0;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++)
		if (streq(p, duration_units[i].name)) {
			if (v > UINT64_MAX / duration_units[i].usec)
				return -ERANGE;
			*ret_usec = v * duration_units[i].usec;
			return 0;
		}
	return -EINVAL;
}

int config_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- key parsers ---- */

#define FIELD(type) (*(type *)field)

static int range_msg(const struct key *k, const char *v, char **m, bool size)
{
	char a[32], b[32];
	const char *(*fmt)(uint64_t, char *) = size ? format_size : format_duration;

	if (k->max == UINT64_MAX)
		return strprintf(m, "'%s' is too small (at least %s%s)", v, fmt(k->min, a),
				 k->zero_off ? ", or 0 for no limit" : "") ?: -EINVAL;
	return strprintf(m, "'%s' is out of range (%s..%s%s)", v, fmt(k->min, a), fmt(k->max, b),
			 k->zero_off ? ", or 0 to disable" : "") ?: -EINVAL;
}

static int parse_instance(struct parse_state *s, const struct key *k, const char *v, void *field,
			  char **m)
{
	if (*v && (!valid_name(v, strlen(v), ".-") || streq(v, ".") || streq(v, "..") ||
		   strlen(v) > 64))
		return strprintf(m, "'%s' is not an instance name (letters, digits, '_', '-', "
				 "'.', at most 64; empty for the top-level instance)", v) ?:
			-EINVAL;
	return replace_string(&FIELD(char *), v);
}

static int parse_deferred(struct parse_state *s, const struct key *k, const char *v, void *field,
			  char **m)
{
	return replace_string(streq(k->name, "events") ? &s->events : &s->stacktrace, v);
}

static int parse_buffer_size(struct parse_state *s, const struct key *k, const char *v,
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

/* Whether name is one of the words in tracefs' trace_clock ("[local] global counter ..."). */
static int clock_exists(const char *tracing_dir, const char *name, char **ret_available)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	char *save = NULL;
	int r;

	r = strprintf(&path, "%s/trace_clock", tracing_dir);
	if (r < 0)
		return r;
	r = read_file(path, &text, NULL);
	if (r < 0)
		return r;
	for (char *w = strtok_r(text, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		size_t n = strlen(w);

		if (w[0] == '[' && n >= 2 && w[n - 1] == ']') {
			w[n - 1] = '\0';
			w++;
		}
		if (streq(w, name))
			return 1;
	}
	/* Report the list as tracefs shows it (the current clock in brackets). */
	free(text);
	text = NULL;
	r = read_file(path, &text, NULL);
	if (r < 0)
		return r;
	text[strcspn(text, "\n")] = '\0';
	*ret_available = steal_ptr(text);
	return 0;
}

static int parse_clock(struct parse_state *s, const struct key *k, const char *v, void *field,
		       char **m)
{
	_cleanup_free_ char *available = NULL;
	int r;

	if (!*v)
		return replace_string(&FIELD(char *), NULL);
	if (!valid_name(v, strlen(v), "-"))
		return strprintf(m, "'%s' is not a clock name", v) ?: -EINVAL;
	if (s->tracing_dir) {
		r = clock_exists(s->tracing_dir, v, &available);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return strprintf(m, "cannot read '%s/trace_clock': %s", s->tracing_dir,
					 strerror(-r)) ?: -EINVAL;
		if (r == 0)
			return strprintf(m, "'%s' is not a trace clock of this kernel "
					 "(available: %s)", v, available) ?: -EINVAL;
	}
	return replace_string(&FIELD(char *), v);
}

/*
 * "SYSTEM:EVENT" or "SYSTEM:EVENT if FILTER": the event must exist in this
 * kernel and the filter parse against its format (when tracing_dir is
 * known); "" for none.
 */
static int parse_trigger(struct parse_state *s, const struct key *k, const char *v, void *field,
			 char **m)
{
	_cleanup_free_ char *system = NULL, *event = NULL;
	const char *colon = strchr(v, ':'), *end, *filter = NULL;

	if (!*v)
		return replace_string(&FIELD(char *), NULL);
	end = v + strcspn(v, " \t");
	if (*end) {
		filter = end + strspn(end, " \t");
		if (!startswith(filter, "if ") && !startswith(filter, "if\t"))
			return strprintf(m, "'%s': expected 'system:event' or 'system:event if "
					 "FILTER'", v) ?: -EINVAL;
		filter += 3;
		filter += strspn(filter, " \t");
		if (!*filter)
			return strprintf(m, "'%s': empty filter after 'if'", v) ?: -EINVAL;
	}
	if (!colon || colon == v || colon + 1 >= end || !valid_name(v, (size_t)(colon - v), "") ||
	    !valid_name(colon + 1, (size_t)(end - colon - 1), ""))
		return strprintf(m, "'%.*s' is not system:event (e.g. oom:mark_victim)", (int)(end - v),
				 v) ?: -EINVAL;
	system = strndup(v, (size_t)(colon - v));
	event = strndup(colon + 1, (size_t)(end - colon - 1));
	if (!system || !event)
		return -ENOMEM;
	if (s->tracing_dir) {
		_cleanup_free_ char *dir = NULL, *err = NULL;
		struct stat st;
		int r;

		if (strprintf(&dir, "%s/events/%s/%s", s->tracing_dir, system, event) < 0)
			return -ENOMEM;
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
			return strprintf(m, "event '%s:%s' does not exist (no %s)", system, event,
					 dir) ?: -EINVAL;
		if (filter) {
			r = config_check_filter(s->tracing_dir, system, event, filter, &err);
			if (r == -ENOMEM)
				return r;
			if (r < 0)
				return strprintf(m, "filter '%s': %s", filter,
						 err ? err : strerror(-r)) ?: -EINVAL;
		}
	}
	return replace_string(&FIELD(char *), v);
}

static int parse_enum(struct parse_state *s, const struct key *k, const char *v, void *field,
		      char **m)
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

static int parse_boolean(struct parse_state *s, const struct key *k, const char *v, void *field,
			 char **m)
{
	if (config_parse_bool(v, &FIELD(bool)) < 0)
		return strprintf(m, "'%s' is not a boolean (use yes or no)", v) ?: -EINVAL;
	return 0;
}

static int parse_dur(struct parse_state *s, const struct key *k, const char *v, void *field,
		     char **m)
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

static int parse_percent(struct parse_state *s, const struct key *k, const char *v, void *field,
			 char **m)
{
	const char *p = v;
	uint64_t n;

	if (parse_number(&p, &n) < 0 || (*p == '%' ? p[1] != '\0' : *p != '\0'))
		return strprintf(m, "'%s' is not a percentage", v) ?: -EINVAL;
	if (n < k->min || n > k->max)
		return strprintf(m, "'%s' is out of range (%" PRIu64 "..%" PRIu64 "%%)", v, k->min,
				 k->max) ?: -EINVAL;
	FIELD(unsigned) = (unsigned)n;
	return 0;
}

static int parse_count(struct parse_state *s, const struct key *k, const char *v, void *field,
		       char **m)
{
	const char *p = v;
	uint64_t n;
	int r;

	r = parse_number(&p, &n);
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

static int parse_sz(struct parse_state *s, const struct key *k, const char *v, void *field,
		    char **m)
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

static int parse_abs_path(struct parse_state *s, const struct key *k, const char *v, void *field,
			  char **m)
{
	if (v[0] != '/')
		return strprintf(m, "'%s' is not an absolute path", v) ?: -EINVAL;
	if (field == &s->c->socket_path && strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return strprintf(m, "'%s' is longer than a unix socket path can be (%zu bytes)", v,
				 sizeof(((struct sockaddr_un *)0)->sun_path) - 1) ?: -EINVAL;
	return replace_string(&FIELD(char *), v);
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Split at blanks; no quoting (a hook that needs more is a script). */
static int split_words(const char *s, char ***ret)
{
	char **v = NULL;
	size_t n = 0;

	for (const char *p = skip_blank(s); *p; p = skip_blank(p)) {
		size_t len = strcspn(p, " \t");
		char **nv = realloc(v, (n + 2) * sizeof(*v));

		if (!nv) {
			strv_free(v);
			return -ENOMEM;
		}
		v = nv;
		v[n] = strndup(p, len);
		v[n + 1] = NULL;
		if (!v[n]) {
			strv_free(v);
			return -ENOMEM;
		}
		n++;
		p += len;
	}
	*ret = v;
	return 0;
}

static int parse_hook(struct parse_state *s, const struct key *k, const char *v, void *field,
		      char **m)
{
	char **argv = NULL;
	int r;

	if (!*v) {
		strv_free(s->c->hook_argv);
		s->c->hook_argv = NULL;
		return replace_string(&FIELD(char *), NULL);
	}
	if (v[0] != '/')
		return strprintf(m, "'%s' must start with the absolute path of a program", v) ?:
			-EINVAL;
	r = split_words(v, &argv);
	if (r < 0)
		return r;
	strv_free(s->c->hook_argv);
	s->c->hook_argv = argv;
	return replace_string(&FIELD(char *), v);
}

static int parse_group(struct parse_state *s, const struct key *k, const char *v, void *field,
		       char **m)
{
	if (!*v)
		return replace_string(&FIELD(char *), NULL);
	errno = 0;
	if (!getgrnam(v)) {
		if (errno != 0 && errno != ENOENT && errno != ESRCH)
			return strprintf(m, "cannot look up group '%s': %s", v, strerror(errno)) ?:
				-EINVAL;
		return strprintf(m, "group '%s' does not exist", v) ?: -EINVAL;
	}
	return replace_string(&FIELD(char *), v);
}

#define CFG_FIELD(f) offsetof(struct config, f)

enum { KEY_EVENTS = 1, KEY_STACKTRACE = 2 };	/* positions in keys[] */

#define KEY(sec, key, fn, type_, off, ...)                                              \
	{ .section = sec, .name = key, .parse = fn, .type = type_, .offset = off, __VA_ARGS__ }
#define RANGE(a, b) .min = (a), .max = (b)

static const struct key keys[] = {
	KEY("trace", "instance", parse_instance, FIELD_STRING, CFG_FIELD(instance),
	    .restart = true),
	KEY("trace", "events", parse_deferred, FIELD_DEFERRED, 0, .restart = true),
	KEY("trace", "stacktrace", parse_deferred, FIELD_DEFERRED, 0, .restart = true),
	KEY("trace", "buffer_size", parse_buffer_size, FIELD_U64, CFG_FIELD(buffer_size_kb),
	    RANGE(4 * KB, 1 * GB), .restart = true),
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

	KEY("archive", "directory", parse_abs_path, FIELD_STRING, CFG_FIELD(directory)),
	KEY("archive", "compression_level", parse_count, FIELD_INT, CFG_FIELD(compression_level),
	    RANGE(1, 19)),
	KEY("archive", "frame_size", parse_sz, FIELD_U64, CFG_FIELD(frame_size),
	    RANGE(64 * KB, 16 * MB)),
	KEY("archive", "frame_encoding", parse_enum, FIELD_ENUM, CFG_FIELD(frame_encoding),
	    .choices = frame_encoding_names),
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
};

#define NR_KEYS ARRAY_SIZE(keys)
_Static_assert(ARRAY_SIZE(keys) <= MAX_KEYS, "MAX_KEYS is too small");

/* ---- events, stack traces, filters ---- */

static void events_free(struct config_event *ev, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(ev[i].system);
		free(ev[i].name);
		free(ev[i].filter);
	}
	free(ev);
}

static int find_event(const struct config *c, const char *system, const char *name)
{
	for (unsigned i = 0; i < c->nr_events; i++)
		if (streq(c->events[i].system, system) && streq(c->events[i].name, name))
			return (int)i;
	return -ENOENT;
}

/* Split "system:name" (len bytes at p) into *ret_sys, *ret_name; -EINVAL if malformed. */
static int split_event(const char *p, size_t len, char **ret_sys, char **ret_name)
{
	const char *colon = memchr(p, ':', len);
	char *sys, *name;

	if (!colon || !valid_name(p, (size_t)(colon - p), NULL) ||
	    !valid_name(colon + 1, len - (size_t)(colon - p) - 1, NULL))
		return -EINVAL;
	sys = strndup(p, (size_t)(colon - p));
	name = strndup(colon + 1, len - (size_t)(colon - p) - 1);
	if (!sys || !name) {
		free(sys);
		free(name);
		return -ENOMEM;
	}
	*ret_sys = sys;
	*ret_name = name;
	return 0;
}

/*
 * Replace c->events with the events in list (space-separated system:event),
 * every one with stacktrace on. If tracing_dir is set, each must exist there.
 */
static int set_events(struct config *c, const char *list, const char *tracing_dir, char **m)
{
	struct config_event *ev = NULL;
	unsigned n = 0;
	int r = 0;

	for (const char *p = skip_blank(list); *p; p = skip_blank(p)) {
		size_t len = strcspn(p, " \t");
		struct config_event *nev;

		if (memchr(p, '*', len) || memchr(p, '?', len)) {
			r = strprintf(m, "'%.*s': wildcards are not supported (name each event)",
				      (int)len, p) ?: -EINVAL;
			goto out;
		}
		if (n == CONFIG_MAX_EVENTS) {
			r = strprintf(m, "more than %d events", CONFIG_MAX_EVENTS) ?: -EINVAL;
			goto out;
		}
		nev = realloc(ev, (n + 1) * sizeof(*ev));
		if (!nev) {
			r = -ENOMEM;
			goto out;
		}
		ev = nev;
		ev[n] = (struct config_event){ .stacktrace = true };
		r = split_event(p, len, &ev[n].system, &ev[n].name);
		if (r == -EINVAL)
			r = strprintf(m, "'%.*s' is not system:event (e.g. kmem:kmalloc)", (int)len,
				      p) ?: -EINVAL;
		if (r < 0)
			goto out;
		n++;
		for (unsigned i = 0; i + 1 < n; i++)
			if (streq(ev[i].system, ev[n - 1].system) &&
			    streq(ev[i].name, ev[n - 1].name)) {
				r = strprintf(m, "'%.*s' is listed twice", (int)len, p) ?: -EINVAL;
				goto out;
			}
		if (tracing_dir) {
			_cleanup_free_ char *dir = NULL;
			struct stat st;

			r = strprintf(&dir, "%s/events/%s/%s", tracing_dir, ev[n - 1].system,
				      ev[n - 1].name);
			if (r < 0)
				goto out;
			if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
				if (errno == ENOENT || errno == ENOTDIR || errno == 0)
					r = strprintf(m, "event '%.*s' does not exist (no %s)",
						      (int)len, p, dir) ?: -EINVAL;
				else
					r = strprintf(m, "cannot check event '%.*s': %s: %s",
						      (int)len, p, dir, strerror(errno)) ?: -EINVAL;
				goto out;
			}
		}
		p += len;
	}
	if (n == 0) {
		r = strprintf(m, "no events (name at least one, e.g. kmem:kmalloc)") ?: -EINVAL;
		goto out;
	}
	events_free(c->events, c->nr_events);
	c->events = steal_ptr(ev);
	c->nr_events = n;
	n = 0;
	c->stacktrace_all = true;
out:
	events_free(ev, n);
	return r;
}

static int set_stacktrace(struct config *c, const char *value, char **m)
{
	bool all = streq(value, "all"), none = streq(value, "none");
	bool *want;
	int r = 0;

	if (all || none) {
		for (unsigned i = 0; i < c->nr_events; i++)
			c->events[i].stacktrace = all;
		c->stacktrace_all = all;
		return 0;
	}
	want = calloc(c->nr_events, sizeof(*want));
	if (!want)
		return -ENOMEM;
	for (const char *p = skip_blank(value); *p; p = skip_blank(p)) {
		size_t len = strcspn(p, " \t");
		_cleanup_free_ char *sys = NULL, *name = NULL;
		int i;

		if ((len == 3 && startswith(p, "all")) || (len == 4 && startswith(p, "none"))) {
			r = strprintf(m, "'%.*s' cannot be combined with event names", (int)len,
				      p) ?: -EINVAL;
			goto out;
		}
		r = split_event(p, len, &sys, &name);
		if (r == -EINVAL)
			r = strprintf(m, "'%.*s' is not system:event, all or none", (int)len,
				      p) ?: -EINVAL;
		if (r < 0)
			goto out;
		i = find_event(c, sys, name);
		if (i < 0) {
			r = strprintf(m, "'%.*s' is not in trace.events", (int)len, p) ?: -EINVAL;
			goto out;
		}
		if (want[i]) {
			r = strprintf(m, "'%.*s' is listed twice", (int)len, p) ?: -EINVAL;
			goto out;
		}
		want[i] = true;
		p += len;
	}
	for (unsigned i = 0; i < c->nr_events; i++)
		c->events[i].stacktrace = want[i];
	c->stacktrace_all = false;
out:
	free(want);
	return r;
}

/* ---- error reporting ---- */

static int fail(struct parse_state *s, unsigned line, const char *key, const char *fmt, ...)
	_printf_(4, 5);
static int fail(struct parse_state *s, unsigned line, const char *key, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	char where[32] = "";
	va_list ap;
	int n;

	if (s->error || s->error_r)
		return s->error_r ?: -EINVAL;
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		msg = NULL;
		return s->error_r = -ENOMEM;
	}
	if (line)
		(void)snprintf(where, sizeof(where), ":%u", line);
	if (strprintf(&s->error, "%s%s: %s%s%s", s->name, where, key ?: "", key ? ": " : "",
		      msg) < 0)
		return s->error_r = -ENOMEM;
	return s->error_r = -EINVAL;
}

/* Report a parser result: r < 0 with msg (owned, freed here) or -ENOMEM. */
static int fail_with(struct parse_state *s, unsigned line, const char *key, int r, char *msg)
{
	if (r == -ENOMEM || !msg) {
		free(msg);
		if (!s->error_r)
			s->error_r = -ENOMEM;
		return -ENOMEM;
	}
	r = fail(s, line, key, "%s", msg);
	free(msg);
	return r;
}

/* ---- inih glue ---- */

/* Check a raw line for what inih would accept but reinterpret. */
static void check_line(struct parse_state *s)
{
	const char *raw = s->raw;
	size_t len = s->raw_len;
	_cleanup_free_ char *line = NULL;
	const char *t;

	if (s->line == 1 && len >= 3 && memcmp(raw, "\xEF\xBB\xBF", 3) == 0) {
		raw += 3;
		len -= 3;
	}
	line = strndup_trimmed(raw, len);
	if (!line) {
		s->error_r = -ENOMEM;
		return;
	}
	t = line;
	s->continuation = false;
	if (!*t || *t == '#' || *t == ';')
		return;
	if (is_blank(raw[0])) {
		/* inih passes an indented line on as more of the previous key's value. */
		if (*t != '[' && s->list_key) {
			s->continuation = true;
			return;
		}
		(void)fail(s, s->line, NULL, "line starts with white space (only the lists "
			   "trace.events and trace.stacktrace continue on indented lines; remove "
			   "the indentation)");
		return;
	}
	s->list_key = NULL;
	if (*t == '[') {
		size_t n = strcspn(t + 1, "]");
		bool known = false;

		if (t[1 + n] != ']') {
			(void)fail(s, s->line, NULL, "'%s': missing ']'", t);
			return;
		}
		for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
			if (strlen(sections[i]) == n && strncmp(t + 1, sections[i], n) == 0)
				known = true;
		if (!known)
			(void)fail(s, s->line, NULL, "[%.*s]: unknown section (sections are "
				   "[trace], [stackmap], [archive], [control], [service])", (int)n,
				   t + 1);
		return;
	}
	if (!strchr(t, '='))
		(void)fail(s, s->line, NULL, "'%s': expected 'key = value'", t);
}

/* fgets() over the text in memory, counting lines. */
static char *reader(char *buf, int size, void *userdata)
{
	struct parse_state *s = userdata;
	const char *p = s->next, *eol;
	size_t len, max = size > 2 ? (size_t)size - 2 : 0;

	if (!*p)
		return NULL;
	eol = strchr(p, '\n');
	len = eol ? (size_t)(eol - p) : strlen(p);
	s->next = eol ? eol + 1 : p + len;
	s->line++;
	s->raw = p;
	s->raw_len = len;
	if (len > max) {
		(void)fail(s, s->line, NULL, "line is too long (at most %zu characters)", max);
		len = max;
	}
	memcpy(buf, p, len);
	buf[len] = '\n';
	buf[len + 1] = '\0';
	check_line(s);
	return buf;
}

static int add_filter(struct parse_state *s, const char *event, const char *expr)
{
	struct filter_def *nf;

	for (unsigned i = 0; i < s->nr_filters; i++)
		if (streq(s->filters[i].event, event))
			return fail(s, s->line, NULL, "trace.filter.%s: duplicate key (first set "
				    "on line %u)", event, s->filters[i].line);
	nf = realloc(s->filters, (s->nr_filters + 1) * sizeof(*nf));
	if (!nf)
		return s->error_r = -ENOMEM;
	s->filters = nf;
	nf[s->nr_filters] = (struct filter_def){ .event = strdup(event), .expr = strdup(expr),
						 .line = s->line };
	if (!nf[s->nr_filters].event || !nf[s->nr_filters].expr) {
		free(nf[s->nr_filters].event);
		free(nf[s->nr_filters].expr);
		return s->error_r = -ENOMEM;
	}
	s->nr_filters++;
	return 0;
}

static int handle(struct parse_state *s, const char *section, const char *name,
		  const char *value)
{
	_cleanup_free_ char *key = NULL, *real_name = NULL, *joined = NULL, *msg = NULL;
	const char *raw = s->raw, *eq;
	const struct key *k = NULL;
	size_t raw_len = s->raw_len;
	int r;

	if (s->continuation) {
		char **list = streq(s->list_key, "events") ? &s->events : &s->stacktrace;

		if (strprintf(&joined, "%s %s", *list, value) < 0)
			return -ENOMEM;
		free(*list);
		*list = steal_ptr(joined);
		return 0;
	}

	/* inih splits at the first '=' or ':'; we only use '=' (see the top of this file). */
	if (s->line == 1 && raw_len >= 3 && memcmp(raw, "\xEF\xBB\xBF", 3) == 0) {
		raw += 3;
		raw_len -= 3;
	}
	eq = memchr(raw, '=', raw_len);
	if (!eq)
		return fail(s, s->line, NULL, "expected 'key = value'");
	real_name = strndup_trimmed(raw, (size_t)(eq - raw));
	if (!real_name)
		return -ENOMEM;
	if (!streq(real_name, name)) {
		if (strprintf(&joined, "%s:%s", name, value) < 0)
			return -ENOMEM;
		eq = strchr(joined, '=');
		if (!eq)
			return fail(s, s->line, NULL, "expected 'key = value'");
		value = skip_blank(eq + 1);
	}
	name = real_name;

	if (!*section)
		return fail(s, s->line, name, "key outside a section (put it under [trace], "
			    "[stackmap], [archive], [control] or [service])");
	if (streq(section, "trace") && startswith(name, "filter."))
		return add_filter(s, name + strlen("filter."), value);

	if (strprintf(&key, "%s.%s", section, name) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < NR_KEYS; i++)
		if (streq(keys[i].section, section) && streq(keys[i].name, name))
			k = &keys[i];
	if (!k) {
		_cleanup_free_ char *list = NULL;

		for (size_t i = 0; i < NR_KEYS; i++)
			if (streq(keys[i].section, section) &&
			    append_word(&list, ", ", keys[i].name) < 0)
				return -ENOMEM;
		return fail(s, s->line, key, "unknown key (keys in [%s]: %s%s)", section,
			    list ?: "", streq(section, "trace") ? ", filter.SYSTEM:EVENT" : "");
	}
	if (s->seen[k - keys])
		return fail(s, s->line, key, "duplicate key (first set on line %u)",
			    s->seen[k - keys]);
	s->seen[k - keys] = s->line;
	if (k->type == FIELD_DEFERRED)
		s->list_key = k->name;

	r = k->parse(s, k, value, (char *)s->c + k->offset, &msg);
	if (r < 0)
		return fail_with(s, s->line, key, r, steal_ptr(msg));
	return 0;
}

static int handler(void *userdata, const char *section, const char *name, const char *value)
{
	struct parse_state *s = userdata;
	int r;

	if (s->error || s->error_r)
		return 1;	/* only the first error is reported */
	r = handle(s, section, name, value);
	if (r == -ENOMEM && !s->error_r)
		s->error_r = -ENOMEM;
	return r >= 0;
}

/* Events, stack traces and filters refer to each other: resolve them once the file is read. */
static int resolve_events(struct parse_state *s)
{
	struct config *c = s->c;
	_cleanup_free_ char *msg = NULL;
	int r;

	if (s->events || s->tracing_dir) {
		r = set_events(c, s->events ?: DEFAULT_EVENTS, s->tracing_dir, &msg);
		if (r < 0)
			return fail_with(s, s->seen[KEY_EVENTS], "trace.events", r, steal_ptr(msg));
	}
	if (s->stacktrace) {
		r = set_stacktrace(c, s->stacktrace, &msg);
		if (r < 0)
			return fail_with(s, s->seen[KEY_STACKTRACE], "trace.stacktrace", r,
					 steal_ptr(msg));
	}
	for (unsigned i = 0; i < s->nr_filters; i++) {
		struct filter_def *f = &s->filters[i];
		_cleanup_free_ char *key = NULL, *sys = NULL, *name = NULL;
		int e;

		if (strprintf(&key, "trace.filter.%s", f->event) < 0)
			return s->error_r = -ENOMEM;
		r = split_event(f->event, strlen(f->event), &sys, &name);
		if (r == -EINVAL)
			return fail(s, f->line, key, "'%s' is not system:event (e.g. "
				    "filter.kmem:kmalloc = bytes_req > 256)", f->event);
		if (r < 0)
			return s->error_r = r;
		e = find_event(c, sys, name);
		if (e < 0)
			return fail(s, f->line, key, "'%s' is not in trace.events", f->event);
		r = config_check_filter(s->tracing_dir, sys, name, f->expr, &msg);
		if (r < 0)
			return fail_with(s, f->line, key, r, steal_ptr(msg));
		r = replace_string(&c->events[e].filter, f->expr);
		if (r < 0)
			return s->error_r = r;
	}
	return 0;
}

static void parse_state_done(struct parse_state *s)
{
	free(s->events);
	free(s->stacktrace);
	for (unsigned i = 0; i < s->nr_filters; i++) {
		free(s->filters[i].event);
		free(s->filters[i].expr);
	}
	free(s->filters);
	free(s->error);
}

/* ---- public functions ---- */

int config_init(struct config *c)
{
	_cleanup_free_ char *msg = NULL;

	*c = (struct config){
		.stackmap = CONFIG_STACKMAP_AUTO,
		.record_mode = CONFIG_RECORD_STREAM,
		.snapshot_interval_usec = 10 * SEC,
		.reset_fill_percent = 90,
		.reset_drops = 1000,
		.reset_mode = CONFIG_RESET_LOSSLESS,
		.reset_guard_usec = 1 * MSEC,
		.compression_level = 1,
		.frame_size = 256 * KB,
		.segment_size = 64 * MB,
		.segment_age_usec = HOUR,
		.max_size = 1 * GB,
		.keep_free_percent = 5,
		.sync = true,
		.status_interval_usec = 60 * SEC,
	};
	c->instance = strdup("");
	c->directory = strdup(ARCHIVEDIR);
	c->socket_path = strdup(DEFAULT_SOCKET);
	if (!c->instance || !c->directory || !c->socket_path ||
	    set_events(c, DEFAULT_EVENTS, NULL, &msg) < 0) {
		config_done(c);
		return -ENOMEM;
	}
	return 0;
}

void config_done(struct config *c)
{
	free(c->path);
	free(c->text);
	free(c->instance);
	events_free(c->events, c->nr_events);
	free(c->clock);
	free(c->flight_trigger);
	free(c->directory);
	free(c->hook);
	strv_free(c->hook_argv);
	free(c->socket_path);
	free(c->socket_group);
	*c = (struct config){};
}

int config_load_string(struct config *c, const char *name, const char *text,
		       const char *tracing_dir, char **ret_error)
{
	struct parse_state s = {
		.c = c,
		.name = name,
		.tracing_dir = tracing_dir,
		.next = text,
	};
	int r;

	r = replace_string(&c->path, name);
	if (r >= 0)
		r = replace_string(&c->text, text);
	if (r < 0)
		return r;

	r = ini_parse_stream(reader, &s, handler, &s);
	if (r < 0 && !s.error_r)
		s.error_r = -ENOMEM;	/* inih fails only to allocate */
	else if (r > 0 && !s.error && !s.error_r)
		(void)fail(&s, (unsigned)r, NULL, "cannot parse this line");
	if (!s.error && !s.error_r)
		(void)resolve_events(&s);

	/* stackmap = auto follows the kernel, and named instances never have it. */
	if (!s.error_r && c->stackmap == CONFIG_STACKMAP_AUTO && c->instance && c->instance[0])
		c->stackmap = CONFIG_STACKMAP_OFF;

	r = s.error_r;
	if (r < 0 && ret_error && s.error)
		*ret_error = steal_ptr(s.error);
	parse_state_done(&s);
	return r;
}

int config_load(struct config *c, const char *path, const char *tracing_dir, char **ret_error)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = read_file(path, &text, &len);
	if (r < 0) {
		if (ret_error && r != -ENOMEM)
			(void)strprintf(ret_error, "%s: cannot read: %s", path, strerror(-r));
		return r;
	}
	if (strlen(text) != len) {
		if (ret_error)
			(void)strprintf(ret_error, "%s: contains a NUL byte (not a text file?)",
					path);
		return -EINVAL;
	}
	return config_load_string(c, path, text, tracing_dir, ret_error);
}

static int check_fail(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int check_fail(char **ret_error, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (!ret_error)
		return -EINVAL;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg)
		return -ENOMEM;
	*ret_error = msg;
	return -EINVAL;
}

int config_check(const struct config *c, char **ret_error)
{
	const char *path = c->path ?: "defaults";
	char a[32], b[32];

	if (c->nr_events == 0)
		return check_fail(ret_error, "%s: no events (trace.events needs at least one)",
				  path);
	if (c->stackmap == CONFIG_STACKMAP_ON && c->instance && c->instance[0])
		return check_fail(ret_error, "%s: stackmap = on needs the top-level instance "
				  "(stackmap is not available in named instances)", path);
	if (c->flight_trigger && c->record_mode != CONFIG_RECORD_FLIGHT)
		return check_fail(ret_error, "%s: trace.flight_trigger needs trace.mode = flight "
				  "(in stream mode everything is written anyway)", path);
	if (c->max_size && c->segment_size && c->max_size / 2 < c->segment_size)
		return check_fail(ret_error, "%s: archive.max_size = %s must be at least twice "
				  "archive.segment_size = %s (retention keeps the segment being "
				  "written and at least one finished one)", path,
				  format_size(c->max_size, a), format_size(c->segment_size, b));
	if (c->record_mode == CONFIG_RECORD_STREAM && !c->segment_size && !c->segment_age_usec &&
	    (c->max_size || c->max_segments))
		return check_fail(ret_error, "%s: archive.max_size and archive.max_segments delete "
				  "finished segments, but with segment_size = 0 and segment_age = "
				  "0 no segment is ever finished in stream mode", path);
	return 0;
}

/* ---- reload ---- */

static bool strings_equal(const char *a, const char *b)
{
	return (!a && !b) || (a && b && streq(a, b));
}

/* Each event of a with want() true is in b with the same value, and the counts match. */
static bool events_same(const struct config *a, const struct config *b, int what)
{
	unsigned na = 0, nb = 0;

	for (unsigned i = 0; i < b->nr_events; i++)
		nb += what == 0 || (what == 1 && b->events[i].stacktrace) ||
		      (what == 2 && b->events[i].filter);
	for (unsigned i = 0; i < a->nr_events; i++) {
		const struct config_event *e = &a->events[i];
		int j;

		if ((what == 1 && !e->stacktrace) || (what == 2 && !e->filter))
			continue;
		na++;
		j = find_event(b, e->system, e->name);
		if (j < 0 || (what == 1 && !b->events[j].stacktrace) ||
		    (what == 2 && !strings_equal(e->filter, b->events[j].filter)))
			return false;
	}
	return na == nb;
}

static bool field_equal(const struct key *k, const struct config *a, const struct config *b)
{
	const char *pa = (const char *)a + k->offset, *pb = (const char *)b + k->offset;

	switch (k->type) {
	case FIELD_STRING:
		return strings_equal(*(char *const *)pa, *(char *const *)pb);
	case FIELD_U64:
		return *(const uint64_t *)pa == *(const uint64_t *)pb;
	case FIELD_UNSIGNED:
		return *(const unsigned *)pa == *(const unsigned *)pb;
	case FIELD_INT:
	case FIELD_ENUM:
		return *(const int *)pa == *(const int *)pb;
	case FIELD_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	case FIELD_DEFERRED:
		if (k == &keys[KEY_EVENTS])
			return events_same(a, b, 0);
		return a->stacktrace_all == b->stacktrace_all && events_same(a, b, 1);
	}
	return false;
}

bool config_needs_restart(const struct config *old, const struct config *new, char **ret_keys)
{
	_cleanup_free_ char *list = NULL;
	bool differ = false, complete = true;

	for (size_t i = 0; i < NR_KEYS; i++) {
		_cleanup_free_ char *key = NULL;

		if (keys[i].restart && !field_equal(&keys[i], old, new)) {
			differ = true;
			if (strprintf(&key, "%s.%s", keys[i].section, keys[i].name) < 0 ||
			    append_word(&list, ", ", key) < 0)
				complete = false;
		}
		/* Filters are keys of their own ("filter.SYSTEM:EVENT") next to events. */
		if (i == KEY_STACKTRACE && !events_same(old, new, 2)) {
			differ = true;
			if (append_word(&list, ", ", "trace.filter") < 0)
				complete = false;
		}
	}
	if (differ && ret_keys)
		*ret_keys = complete ? steal_ptr(list) : NULL;
	return differ;
}

#define SWAP(type, a, b)                  \
	do {                              \
		type tmp_ = *(type *)(a); \
		*(type *)(a) = *(type *)(b); \
		*(type *)(b) = tmp_;      \
	} while (0)

void config_keep_running(struct config *next, struct config *running)
{
	for (size_t i = 0; i < NR_KEYS; i++) {
		char *pa = (char *)next + keys[i].offset, *pb = (char *)running + keys[i].offset;

		if (!keys[i].restart)
			continue;
		switch (keys[i].type) {
		case FIELD_STRING:
			SWAP(char *, pa, pb);
			break;
		case FIELD_U64:
			SWAP(uint64_t, pa, pb);
			break;
		case FIELD_UNSIGNED:
			SWAP(unsigned, pa, pb);
			break;
		case FIELD_INT:
		case FIELD_ENUM:
			SWAP(int, pa, pb);
			break;
		case FIELD_BOOL:
			SWAP(bool, pa, pb);
			break;
		case FIELD_DEFERRED:
			/* events, their filters and stack traces move together, once */
			if (i == KEY_EVENTS) {
				SWAP(struct config_event *, &next->events, &running->events);
				SWAP(unsigned, &next->nr_events, &running->nr_events);
				SWAP(bool, &next->stacktrace_all, &running->stacktrace_all);
			}
			break;
		}
	}
}

/* ---- boot ---- */

int config_boot_cmdline(const struct config *c, char **ret)
{
	_cleanup_free_ char *events = NULL, *options = NULL, *triggers = NULL, *line = NULL;
	bool stacks = false;
	unsigned nr_triggers = 0;
	char size[32];
	int r;

	/* The kernel starts boot-time events in the top-level buffer only. */
	if (!c->instance || c->instance[0])
		return -EINVAL;
	if (c->nr_events == 0)
		return -EINVAL;

	for (unsigned i = 0; i < c->nr_events; i++) {
		const struct config_event *e = &c->events[i];
		_cleanup_free_ char *ev = NULL;

		if (strprintf(&ev, "%s:%s", e->system, e->name) < 0 ||
		    append_word(&events, ",", ev) < 0)
			return -ENOMEM;
		stacks |= e->stacktrace;
		if (c->stacktrace_all || !e->stacktrace)
			continue;
		/*
		 * trace_trigger= names events without their system (the kernel
		 * matches the bare name), so two configured events with the same
		 * name would both get the trigger.
		 */
		bool seen = false;

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
		    append_word(&triggers, ",", ev) < 0)
			return -ENOMEM;
	}
	/* The stack map only changes how stacks are stored, so it needs stacks. */
	if (stacks && c->stackmap != CONFIG_STACKMAP_OFF &&
	    append_word(&options, ",", "stackmap") < 0)
		return -ENOMEM;
	if (c->stacktrace_all && stacks && append_word(&options, ",", "stacktrace") < 0)
		return -ENOMEM;
	/*
	 * Streaming runs with overwrite off (the kernel drops and counts new
	 * events rather than overwrite unread ones); start the boot capture
	 * the same way, which also keeps the earliest events if the buffer
	 * fills before stackmapd starts.
	 */
	if (c->record_mode == CONFIG_RECORD_STREAM && append_word(&options, ",", "nooverwrite") < 0)
		return -ENOMEM;

	r = strprintf(&line, "trace_event=%s", events);
	if (r >= 0 && options) {
		char *n = NULL;

		r = strprintf(&n, "%s trace_options=%s", line, options);
		free(line);
		line = n;
	}
	if (r >= 0 && triggers) {
		char *n = NULL;

		r = strprintf(&n, "%s trace_trigger=%s", line, triggers);
		free(line);
		line = n;
	}
	if (r >= 0 && c->buffer_size_kb) {
		char *n = NULL;

		/* trace_buf_size= is per CPU and goes through memparse() (K, M, G suffixes). */
		r = strprintf(&n, "%s trace_buf_size=%s", line,
			      format_size(c->buffer_size_kb * KB, size));
		free(line);
		line = n;
	}
	if (r >= 0 && c->clock) {
		char *n = NULL;

		r = strprintf(&n, "%s trace_clock=%s", line, c->clock);
		free(line);
		line = n;
	}
	if (r < 0 || !line)
		return -ENOMEM;
	*ret = steal_ptr(line);
	return 0;
}
