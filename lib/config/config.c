/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading the configuration file: defaults, the line reader that feeds
 * inih, the dispatch of each "key = value" to its row in the key table
 * (config-keys.c), the lists that refer to each other (events, stack
 * traces, filters) resolved once the whole file is read, the line of each
 * key kept for later messages, and the rules that span keys.
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
#include <assert.h>
#include <stdarg.h>

#include <ini.h>

#include "config.h"
#include "config-internal.h"
#include "filter-grammar.h"
#include "util.h"

#ifndef ARCHIVEDIR
#define ARCHIVEDIR "/var/lib/stackmapd"
#endif
#ifndef RUNSTATEDIR
#define RUNSTATEDIR "/run"
#endif

#define DEFAULT_SOCKET RUNSTATEDIR "/stackmapd/control"

static const char *const sections[] = { "trace", "stackmap", "archive", "control", "service",
					"crash" };

/* Copy [p, p+len) without surrounding white space. */
static char *strndup_trimmed(const char *p, size_t len)
{
	while (len > 0 && config_is_blank(*p)) {
		p++;
		len--;
	}
	while (len > 0 && config_is_blank(p[len - 1]))
		len--;
	return strndup(p, len);
}

/* ---- events, stack traces ---- */

static void events_free(struct config_event *ev, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(ev[i].system);
		free(ev[i].name);
		free(ev[i].filter);
	}
	free(ev);
}

int config_find_event(const struct config *c, const char *system, const char *name)
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

	if (!colon || !config_valid_name(p, (size_t)(colon - p), NULL) ||
	    !config_valid_name(colon + 1, len - (size_t)(colon - p) - 1, NULL))
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

/* A word of an event list (len bytes at p) with a comma: the list is separated the wrong way. */
static int refuse_commas(const char *p, size_t len, char **m)
{
	if (!memchr(p, ',', len))
		return 0;
	return strprintf(m, "'%.*s': separate events with spaces, not commas", (int)len, p) ?:
		-EINVAL;
}

/*
 * Replace c->events with the events in list (space-separated system:event),
 * every one with stacktrace on.
 */
int config_set_events(struct config *c, const char *list, char **m)
{
	struct config_event *ev = NULL;
	size_t cap = 0;
	unsigned n = 0;
	int r = 0;

	for (const char *p = config_skip_blank(list); *p; p = config_skip_blank(p)) {
		size_t len = strcspn(p, " \t");
		if (memchr(p, '*', len) || memchr(p, '?', len)) {
			r = strprintf(m, "'%.*s': wildcards are not supported (name each event)",
				      (int)len, p) ?: -EINVAL;
			goto out;
		}
		r = refuse_commas(p, len, m);
		if (r < 0)
			goto out;
		if (n == CONFIG_MAX_EVENTS) {
			r = strprintf(m, "more than %d events", CONFIG_MAX_EVENTS) ?: -EINVAL;
			goto out;
		}
		if (GREEDY_REALLOC(ev, cap, (size_t)n + 1) < 0) {
			r = -ENOMEM;
			goto out;
		}
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
	for (const char *p = config_skip_blank(value); *p; p = config_skip_blank(p)) {
		size_t len = strcspn(p, " \t");
		_cleanup_free_ char *sys = NULL, *name = NULL;
		int i;

		r = refuse_commas(p, len, m);
		if (r < 0)
			goto out;
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
		i = config_find_event(c, sys, name);
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
	int r;

	if (s->error || s->error_r)
		return s->error_r ?: -EINVAL;
	va_start(ap, fmt);
	r = vstrprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return s->error_r = r;
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
	if (config_is_blank(raw[0])) {
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
				   "[trace], [stackmap], [archive], [control], [service], [crash])", (int)n,
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
	if (GREEDY_REALLOC(s->filters, s->cap_filters, (size_t)s->nr_filters + 1) < 0)
		return s->error_r = -ENOMEM;
	nf = s->filters;
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
	const struct config_key *k = NULL;
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
		value = config_skip_blank(eq + 1);
	}
	name = real_name;

	if (!*section)
		return fail(s, s->line, name, "key outside a section (put it under [trace], "
			    "[stackmap], [archive], [control] or [service])");
	if (streq(section, "trace") && startswith(name, "filter."))
		return add_filter(s, name + strlen("filter."), value);

	if (strprintf(&key, "%s.%s", section, name) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < config_nr_keys; i++)
		if (streq(config_keys[i].section, section) && streq(config_keys[i].name, name))
			k = &config_keys[i];
	if (!k) {
		_cleanup_free_ char *list = NULL;

		for (size_t i = 0; i < config_nr_keys; i++)
			if (streq(config_keys[i].section, section) &&
			    config_append_word(&list, ", ", config_keys[i].name) < 0)
				return -ENOMEM;
		return fail(s, s->line, key, "unknown key (keys in [%s]: %s%s)", section,
			    list ?: "", streq(section, "trace") ? ", filter.SYSTEM:EVENT" : "");
	}
	if (s->c->key_lines[k - config_keys])
		return fail(s, s->line, key, "duplicate key (first set on line %u)",
			    s->c->key_lines[k - config_keys]);
	s->c->key_lines[k - config_keys] = s->line;
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

	if (s->events) {
		r = config_set_events(c, s->events, &msg);
		if (r < 0)
			return fail_with(s, s->c->key_lines[CONFIG_KEY_EVENTS], "trace.events", r, steal_ptr(msg));
	}
	if (s->stacktrace) {
		r = set_stacktrace(c, s->stacktrace, &msg);
		if (r < 0)
			return fail_with(s, s->c->key_lines[CONFIG_KEY_STACKTRACE], "trace.stacktrace", r,
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
		e = config_find_event(c, sys, name);
		if (e < 0)
			return fail(s, f->line, key, "'%s' is not in trace.events", f->event);
		r = filter_grammar_check(NULL, f->expr, &msg);
		if (r < 0)
			return fail_with(s, f->line, key, r, steal_ptr(msg));
		r = config_replace_string(&c->events[e].filter, f->expr);
		if (r < 0)
			return s->error_r = r;
		c->events[e].filter_line = f->line;
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

	assert(c);

	*c = (struct config){
		.stackmap = CONFIG_STACKMAP_AUTO,
		.record_mode = CONFIG_RECORD_STREAM,
		.snapshot_interval_usec = 10 * SEC,
		.reset_fill_percent = 90,
		.reset_drops = 1000,
		.reset_mode = CONFIG_RESET_LOSSLESS,
		.reset_guard_usec = 1 * MSEC,
		.reset_realtime = true,
		.compression_level = 1,
		.stack_time = CONFIG_STACK_TIME_EVENT,
		.subbuf_size_kb = CONFIG_SUBBUF_DEFAULT_KB,
		.subbuf_size_auto = true,
		.frame_size = 256 * KB,
		.segment_size = 64 * MB,
		.segment_age_usec = HOUR,
		.max_size = 1 * GB,
		.keep_free_percent = 5,
		.sync = true,
		.status_interval_usec = 60 * SEC,
		.crash_clock_interval_usec = 2 * SEC,
	};
	c->instance = strdup("");
	c->directory = strdup(ARCHIVEDIR);
	c->socket_path = strdup(DEFAULT_SOCKET);
	if (!c->instance || !c->directory || !c->socket_path ||
	    config_set_events(c, DEFAULT_EVENTS, &msg) < 0) {
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
	config_strv_free(c->hook_argv);
	free(c->socket_path);
	free(c->socket_group);
	*c = (struct config){};
}

int config_load_string(struct config *c, const char *name, const char *text, char **ret_error)
{
	struct parse_state s = {
		.c = c,
		.name = name,
		.next = text,
	};
	int r;

	assert(c);
	assert(name);
	assert(text);

	memset(c->key_lines, 0, sizeof(c->key_lines));
	r = config_replace_string(&c->path, name);
	if (r >= 0)
		r = config_replace_string(&c->text, text);
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

int config_load(struct config *c, const char *path, char **ret_error)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	assert(c);
	assert(path);

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
	return config_load_string(c, path, text, ret_error);
}

struct socket_state {
	char *path;
	int r;
};

static int socket_handler(void *userdata, const char *section, const char *name,
			  const char *value)
{
	struct socket_state *s = userdata;

	if (streq(section, "control") && streq(name, "socket") && *value &&
	    config_replace_string(&s->path, value) < 0)
		s->r = -ENOMEM;
	return 1;	/* other keys, and errors, are config_load()'s business */
}

int config_socket_path(const char *path, char **ret)
{
	struct socket_state s = { 0 };
	int r;

	assert(path);
	assert(ret);

	/* inih opens the file with fopen(), which leaves errno set when it fails */
	errno = 0;
	r = ini_parse(path, socket_handler, &s);
	if (r == -1)
		s.r = errno > 0 ? -errno : -EIO;
	else if (r == -2)
		s.r = -ENOMEM;
	if (s.r == 0 && !s.path) {
		s.path = strdup(DEFAULT_SOCKET);
		if (!s.path)
			s.r = -ENOMEM;
	}
	if (s.r < 0) {
		free(s.path);
		return s.r;
	}
	*ret = s.path;
	return 0;
}

unsigned config_key_line(const struct config *c, const char *key)
{
	for (size_t i = 0; i < config_nr_keys; i++) {
		size_t n = strlen(config_keys[i].section);

		if (strncmp(key, config_keys[i].section, n) == 0 && key[n] == '.' &&
		    streq(key + n + 1, config_keys[i].name))
			return c->key_lines[i];
	}
	return 0;
}

static int check_fail(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int check_fail(char **ret_error, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (!ret_error)
		return -EINVAL;
	va_start(ap, fmt);
	r = vstrprintf(ret_error, fmt, ap);
	va_end(ap);
	return r < 0 ? r : -EINVAL;
}

int config_check(const struct config *c, char **ret_error)
{
	const char *path;
	char a[32], b[32];

	assert(c);
	path = c->path ?: "defaults";
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
				  config_format_size(c->max_size, a), config_format_size(c->segment_size, b));
	if (c->record_mode == CONFIG_RECORD_STREAM && !c->segment_size && !c->segment_age_usec &&
	    (c->max_size || c->max_segments))
		return check_fail(ret_error, "%s: archive.max_size and archive.max_segments delete "
				  "finished segments, but with segment_size = 0 and segment_age = "
				  "0 no segment is ever finished in stream mode", path);
	return 0;
}
