/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the files of the configuration parser (lib/config/config*.c) and by
 * nothing else: the key table, the state of one parse and the value
 * helpers. The public interface is config.h.
 */
#ifndef STACKMAPD_CONFIG_INTERNAL_H
#define STACKMAPD_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define KB UINT64_C(1024)
#define MB (KB * 1024)
#define GB (MB * 1024)
#define MSEC USEC_PER_MSEC
#define SEC USEC_PER_SEC
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)

#define DEFAULT_EVENTS "kmem:kmem_cache_alloc kmem:kmalloc"

struct parse_state;
struct config_key;

/*
 * A value parser: check value and store it in field. On a bad value return
 * -EINVAL (or -ERANGE) with *ret_msg saying what is wrong (without the
 * PATH:LINE: KEY: prefix); -ENOMEM without a message.
 */
typedef int (*config_parse_fn)(struct parse_state *s, const struct config_key *k,
			       const char *value, void *field, char **ret_msg);

enum config_field_type {
	FIELD_STRING,		/* char *, may be NULL */
	FIELD_U64,
	FIELD_UNSIGNED,
	FIELD_INT,
	FIELD_BOOL,
	FIELD_ENUM,		/* stored as an int-sized enum */
	FIELD_DEFERRED,		/* events, stacktrace: resolved after the whole file is read */
};

struct config_key {
	const char *section;
	const char *name;
	config_parse_fn parse;
	enum config_field_type type;
	size_t offset;
	uint64_t min, max;	/* range for numbers, sizes and durations */
	bool zero_off;		/* 0 is accepted below min and means "off" */
	const char *const *choices;
	bool restart;		/* a change needs a tracing restart */
};

/* The table of every key (config-keys.c); index = position in config.key_lines. */
extern const struct config_key config_keys[];
extern const size_t config_nr_keys;
enum { CONFIG_KEY_EVENTS = 1, CONFIG_KEY_STACKTRACE = 2 };	/* positions in config_keys[] */

struct filter_def {
	char *event;		/* "system:name" as written after "filter." */
	char *expr;
	unsigned line;
};

/* One parse of one file (config.c); the key parsers see it too. */
struct parse_state {
	struct config *c;
	const char *name;		/* file name for messages */

	const char *next;		/* reader position in the text */
	unsigned line;			/* number of the line the reader returned last */
	const char *raw;		/* that line, unmodified (inih edits its copy) */
	size_t raw_len;

	const char *list_key;		/* last line set events or stacktrace: it may continue */
	bool continuation;		/* the current line continues list_key */

	char *events;			/* raw values of the deferred keys */
	char *stacktrace;
	struct filter_def *filters;
	unsigned nr_filters;
	size_t cap_filters;

	char *error;			/* the first error, complete message */
	int error_r;
};

/*
 * Value helpers (config-values.c), under config.c and the other files of
 * the parser: they call none of those.
 */
bool config_is_blank(char ch);
const char *config_skip_blank(const char *p);
int config_replace_string(char **field, const char *value);
const char *config_format_size(uint64_t v, char buf[static 32]);
const char *config_format_duration(uint64_t usec, char buf[static 32]);
int config_append_word(char **list, const char *sep, const char *word);
bool config_valid_name(const char *s, size_t len, const char *extra);
int config_parse_number(const char **p, uint64_t *ret);
void config_strv_free(char **v);
int config_split_words(const char *s, char ***ret);

/* Events and stack traces (config.c), also used for the defaults. */
int config_set_events(struct config *c, const char *list, char **ret_msg);
int config_find_event(const struct config *c, const char *system, const char *name);

#endif
