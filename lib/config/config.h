/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration file (INI, parsed by inih): defaults, parsing, the
 * rules that need nothing but the file, reload comparison and the
 * equivalent kernel command line. Every key is validated; unknown
 * sections and keys are errors. What only the running kernel can tell
 * (events, fields, clocks) is checked by the daemon (config-check.h),
 * with the lines recorded here.
 */
#ifndef STACKMAPD_CONFIG_H
#define STACKMAPD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define CONFIG_MAX_EVENTS 256
#define CONFIG_MAX_KEYS 40		/* room in struct config for the line of each key */
#define CONFIG_EXIT_INVALID 78		/* EX_CONFIG */

enum config_stackmap {
	CONFIG_STACKMAP_AUTO,
	CONFIG_STACKMAP_ON,
	CONFIG_STACKMAP_OFF,
	CONFIG_STACKMAP_MAX
};

enum config_reset_mode {
	CONFIG_RESET_LOSSLESS,
	CONFIG_RESET_STRICT,
	CONFIG_RESET_MODE_MAX
};

enum config_frame_encoding {
	CONFIG_FRAME_COLUMNS,		/* column-encode frames before compressing them */
	CONFIG_FRAME_PAGES,		/* compress the pages as they are */
	CONFIG_FRAME_ENCODING_MAX
};

/*
 * The sub-buffer size when the file sets none, on kernels that can change
 * it (Linux 6.8): chosen from bench/run (doc/performance.md).
 */
#define CONFIG_SUBBUF_DEFAULT_KB 8

enum config_stack_time {
	CONFIG_STACK_TIME_OWN,		/* a stack keeps the time the kernel gave it */
	CONFIG_STACK_TIME_EVENT,	/* a daemon stack takes its event's time */
	CONFIG_STACK_TIME_MAX
};

enum config_record_mode {
	CONFIG_RECORD_STREAM,		/* write everything as it comes */
	CONFIG_RECORD_FLIGHT,		/* overwrite buffer, write on snapshot/trigger */
	CONFIG_RECORD_MODE_MAX
};

struct config_event {
	char *system;			/* "kmem" */
	char *name;			/* "kmem_cache_alloc" */
	char *filter;			/* NULL or the filter expression */
	bool stacktrace;		/* record a kernel stack with each hit */
	unsigned filter_line;		/* line of trace.filter.SYSTEM:EVENT, 0 = none */
};

struct config {
	char *path;			/* file it was loaded from, NULL for defaults */
	char *text;			/* the file's content, stored in segments */

	/* [trace] */
	char *instance;			/* "" = top level */
	struct config_event *events;
	unsigned nr_events;
	bool stacktrace_all;		/* stacktrace = all */
	uint64_t buffer_size_kb;	/* per CPU; 0 = leave as is */
	uint64_t subbuf_size_kb;	/* ring-buffer sub-buffer (page); 0 = leave as is */
	bool subbuf_size_auto;		/* not set: CONFIG_SUBBUF_DEFAULT_KB where the kernel can */
	char *clock;			/* trace clock; NULL = leave as is */
	enum config_stackmap stackmap;
	bool keep_tracing;		/* leave tracing running on exit */
	enum config_record_mode record_mode;
	char *flight_trigger;		/* "system:event" whose hit saves the flight buffer; NULL = none */

	/* [stackmap] */
	uint64_t snapshot_interval_usec;
	unsigned reset_fill_percent;	/* reset when the map is this full; 0 = never */
	uint64_t reset_drops;		/* reset when drops grew by this much; 0 = never */
	uint64_t reset_interval_usec;	/* reset at least this often; 0 = never */
	enum config_reset_mode reset_mode;
	uint64_t reset_guard_usec;	/* widen the ambiguous window on each side */
	bool reset_realtime;		/* lowest real-time priority between the reset's markers */

	/* [archive] */
	char *directory;
	int compression_level;
	uint64_t frame_size;		/* raw bytes per compressed page frame */
	enum config_frame_encoding frame_encoding;
	enum config_stack_time stack_time;
	uint64_t segment_size;		/* rotate at this many bytes; 0 = never */
	uint64_t segment_age_usec;	/* rotate at this age; 0 = never */
	uint64_t max_size;		/* retention: total bytes; 0 = unlimited */
	unsigned max_segments;		/* retention: count; 0 = unlimited */
	unsigned keep_free_percent;	/* retention: keep this much of the fs free */
	bool sync;			/* fsync finished segments (default yes) */
	char *hook;			/* command run with each finished segment; NULL = none */
	char **hook_argv;		/* hook split at blanks (no quoting), NULL-terminated;
					 * run with the segment path appended; NULL = none */

	/* [control] */
	char *socket_path;
	char *socket_group;		/* group allowed besides root; NULL = root only */

	/* [service] */
	uint64_t status_interval_usec;	/* STATUS= refresh and summary log */

	/* [crash] */
	uint64_t crash_buffer_size;	/* reserved memory of the crash buffer; 0 = off */
	uint64_t crash_clock_interval_usec;	/* clock marker period in the crash buffer */

	/* Line each key was set on, 0 = not in the file; see config_key_line(). */
	unsigned key_lines[CONFIG_MAX_KEYS];
};

/* Fill *c with defaults (all strings allocated). Returns 0 or -ENOMEM. */
int config_init(struct config *c);

/* Free everything *c owns and reset it to zeros. */
void config_done(struct config *c);

/*
 * Load path on top of the defaults already in *c. On error returns a
 * negative errno and, if ret_error is not NULL, a message
 * "PATH:LINE: KEY: what is wrong" (caller frees) about the first error in
 * the file ("PATH: KEY: ..." for a default value, "PATH:LINE: ..." for a
 * line that is not "key = value"). *c is left in an unspecified state on
 * error (config_done() still works): parse into a fresh struct. Nothing
 * is checked against the running kernel (the daemon does that, see its
 * config-check.h); filters are checked for their structure only. c->path
 * and c->text get the name and the file's content, c->key_lines the line
 * of each key. stackmap = auto becomes CONFIG_STACKMAP_OFF with a named
 * instance (only the top level has one).
 */
int config_load(struct config *c, const char *path, char **ret_error);

/* Same as config_load from a string (name is used in messages). */
int config_load_string(struct config *c, const char *name, const char *text, char **ret_error);

/*
 * The control socket the file at path names ([control] socket), else the
 * default. Only that key is read, so that a file config_load() would
 * reject still names its socket; nothing is checked. *ret is allocated
 * (caller frees). Returns 0, -ENOMEM, or the -errno of opening path.
 */
int config_socket_path(const char *path, char **ret);

/*
 * The line "section.name" (e.g. "trace.clock") was set on in the file c
 * was loaded from; 0 if it was not (a default) or the key is unknown.
 * Filters have their own line (config_event.filter_line).
 */
unsigned config_key_line(const struct config *c, const char *key);

/*
 * Split a flight trigger "SYSTEM:EVENT" or "SYSTEM:EVENT if FILTER":
 * *ret_system and *ret_event are allocated (caller frees), *ret_filter
 * points into spec (NULL without a filter). Returns 0, -EINVAL if spec
 * has neither form, -ENOMEM.
 */
int config_trigger_split(const char *spec, char **ret_system, char **ret_event,
			 const char **ret_filter);

/*
 * Rules that span keys. Returns 0 or -EINVAL with *ret_error set
 * ("PATH: what is wrong").
 */
int config_check(const struct config *c, char **ret_error);

/*
 * Compare two valid configs: return true when keys that need a tracing
 * restart differ (trace.instance, events, stacktrace, filter.*,
 * buffer_size, clock, stackmap, mode; control.socket), so that reload can
 * refuse to half-apply them. Then, if ret_keys is not NULL, *ret_keys gets
 * their names ("trace.events, trace.clock"; caller frees; NULL if out of
 * memory). Untouched when returning false.
 */
bool config_needs_restart(const struct config *old, const struct config *new, char **ret_keys);

/*
 * Reload: give next the values of running for every key that needs a
 * restart (swapping ownership, so running gets next's values and frees
 * them), so that the configuration in force says what actually runs and a
 * later reload still reports those keys.
 */
void config_keep_running(struct config *next, struct config *running);

/*
 * The kernel command-line arguments that start the same capture at boot,
 * space-separated on one line: trace_event=, trace_options= (stackmap,
 * stacktrace, nooverwrite in stream mode), trace_trigger= (for a subset of
 * stack traces), trace_buf_size=, trace_clock=. Filters have no boot-time
 * form and are left out. *ret is allocated (caller frees). Returns 0,
 * -EINVAL for a named instance (boot events go to the top level only),
 * -ENOTUNIQ when two events share a name but not their stacktrace setting
 * (trace_trigger= names events without their system), -E2BIG for more
 * than 32 triggers (the kernel's limit), -ENOMEM.
 */
int config_boot_cmdline(const struct config *c, char **ret);

/*
 * The crash buffer's instance in tracefs and the reserve_mem= label of its
 * memory (the same name for both).
 */
#define CONFIG_CRASH_INSTANCE "stackmapd_crash"

/*
 * The kernel command-line arguments that keep the crash buffer in memory
 * across a warm reboot: reserve_mem=SIZE:4096:NAME and
 * trace_instance=NAME^traceoff@NAME,EVENTS (the events enabled, tracing
 * off until stackmapd has saved what the previous boot left). *ret is
 * allocated (caller frees). Returns 0, -ENODATA when the crash buffer is
 * off, -ENOMEM.
 */
int config_crash_cmdline(const struct config *c, char **ret);

/*
 * Parsers exposed for the client and tests. Return 0, -EINVAL for bad
 * syntax (a duration needs a unit unless it is 0), -ERANGE on overflow.
 */
int config_parse_size(const char *s, uint64_t *ret);		/* "64M", "512K", "1G", "4096" */
int config_parse_duration(const char *s, uint64_t *ret_usec);	/* "10min", "30s", "1h", "500ms" */
int config_parse_bool(const char *s, bool *ret);

#endif
